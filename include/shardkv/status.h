// Status and StatusOr: how every shardkv module reports failure.
//
// Modelled on leveldb::Status. Nothing in shardkv throws across a module boundary; a fallible
// call returns a Status (or a StatusOr<T> carrying a value on success). A Status is cheap to
// copy when ok() (no allocation) and carries a code plus a human-readable message otherwise.
//
// Thread-safety: a Status is a value type; distinct objects may be used from distinct threads.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace shardkv {

class [[nodiscard]] Status {
 public:
  enum class Code : unsigned char {
    kOk = 0,
    kNotFound,
    kInvalidArgument,
    kAlreadyExists,
    kFailedPrecondition,
    kCorruption,
    kIOError,
    kUnavailable,
    kTimeout,
    kStaleEpoch,
    kResourceExhausted,
    kAborted,
    kNotSupported,
    kInternal,
    // The connection did not authenticate (no, wrong or replayed secret; a role that may not
    // send this request). Never retried with the same secret; the CLI exits 3.
    kUnauthenticated,
  };

  // Why an error happened, where a caller decides by it: whether a write may have taken effect
  // (MutationOutcome), the CLI's exit code, the Redis error prefix, whether to retry elsewhere.
  // It travels with the Status over the wire (ErrorResponse, per-key results), so no caller reads
  // the message to decide. kNone: the code says all a caller acts on. docs/design.md "Error
  // reasons" has the table of reasons and what each maps to. Values never change meaning; new
  // reasons are appended before kCount.
  enum class Reason : unsigned char {
    kNone = 0,
    kNotApplied,       // nothing was applied: a replica holds a newer version of the key
    kOutcomeUnknown,   // sent; whether it took effect is unknown (an earlier attempt may have)
    kNoMajority,       // a side without a majority of the voters (members) refused a change
    kUnformed,         // the node belongs to no cluster yet
    kStarting,         // the node is starting and serves no keys yet
    kSuperseded,       // a newer map or command took its place; it did nothing
    kLate,             // it reached the node after its client stopped waiting: dropped unrun
    kLostInFlight,     // the connection broke with the request in flight
    kQuorumMissed,     // fewer replicas than the write quorum acked; those that did keep it
    kWrongCluster,     // the node belongs to another cluster
    kRefusedByPolicy,  // a command shardkv refuses by design (it would break a guarantee)
    kNotLeader,        // the node does not lead the consensus group (a leader change is on)
    kClockRejected,    // the client's timestamp is too far ahead of the node's clock
    kUnexpectedEpoch,  // the map is not at the epoch the caller expected (it moved on)
    kUnreachable,      // the node could not be reached: nothing was sent to it
    kNeedsRebuild,     // the node's data is missing or another cluster's: only --rebuild helps
    kWrongType,        // the key holds another type (a hash, a string) than the command works on
    kCount,            // not a reason: the number of reasons
  };

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(Code code, Reason reason, std::string message)
      : code_(code), reason_(reason), message_(std::move(message)) {}

  static Status OK() { return Status(); }
  static Status NotFound(std::string m) { return {Code::kNotFound, std::move(m)}; }
  static Status InvalidArgument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
  static Status AlreadyExists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
  static Status FailedPrecondition(std::string m) {
    return {Code::kFailedPrecondition, std::move(m)};
  }
  static Status Corruption(std::string m) { return {Code::kCorruption, std::move(m)}; }
  static Status IOError(std::string m) { return {Code::kIOError, std::move(m)}; }
  static Status Unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
  static Status Timeout(std::string m) { return {Code::kTimeout, std::move(m)}; }
  static Status StaleEpoch(std::string m) { return {Code::kStaleEpoch, std::move(m)}; }
  static Status ResourceExhausted(std::string m) {
    return {Code::kResourceExhausted, std::move(m)};
  }
  static Status Aborted(std::string m) { return {Code::kAborted, std::move(m)}; }
  static Status NotSupported(std::string m) { return {Code::kNotSupported, std::move(m)}; }
  static Status Internal(std::string m) { return {Code::kInternal, std::move(m)}; }
  static Status Unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  Code code() const { return code_; }
  Reason reason() const { return reason_; }
  bool Is(Reason reason) const { return reason_ == reason; }
  const std::string& message() const { return message_; }

  // "OK" or "<code name>: <message>".
  std::string ToString() const;
  static std::string_view CodeName(Code code);
  // "none", "not_applied", "outcome_unknown", ... ("unknown" past kCount).
  static std::string_view ReasonName(Reason reason);

  // Returns a copy whose message is "<prefix>: <message>"; keeps the code and the reason. Used to
  // add context (node address, file name) as an error travels up.
  Status WithContext(std::string_view prefix) const;
  // Returns a copy with `reason` (an OK status stays OK, without a reason).
  Status WithReason(Reason reason) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.reason_ == b.reason_ && a.message_ == b.message_;
  }

 private:
  Code code_ = Code::kOk;
  Reason reason_ = Reason::kNone;
  std::string message_;
};

// A value of type T, or the Status explaining why there is none.
// REQUIRES: constructed from a non-OK Status when it holds no value.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = Status::Internal("StatusOr built from an OK status");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T& operator*() & { return *value_; }
  const T& operator*() const& { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace shardkv

// Early-return helpers. Kept as macros because a function cannot return from its caller.
#define SHARDKV_RETURN_IF_ERROR(expr)          \
  do {                                         \
    ::shardkv::Status _shardkv_st = (expr);    \
    if (!_shardkv_st.ok()) return _shardkv_st; \
  } while (0)

#define SHARDKV_CONCAT_INNER(a, b) a##b
#define SHARDKV_CONCAT(a, b) SHARDKV_CONCAT_INNER(a, b)
#define SHARDKV_ASSIGN_OR_RETURN(lhs, expr) \
  SHARDKV_ASSIGN_OR_RETURN_IMPL(SHARDKV_CONCAT(_shardkv_so_, __LINE__), lhs, expr)
#define SHARDKV_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()
