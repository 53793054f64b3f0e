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

  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

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
  const std::string& message() const { return message_; }

  // "OK" or "<code name>: <message>".
  std::string ToString() const;
  static std::string_view CodeName(Code code);

  // Returns a copy whose message is "<prefix>: <message>"; keeps the code. Used to add context
  // (node address, file name) as an error travels up.
  Status WithContext(std::string_view prefix) const;

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  Code code_ = Code::kOk;
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
