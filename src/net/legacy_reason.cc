#include "net/legacy_reason.h"

#include <initializer_list>

namespace shardkv::net {
namespace {

bool Has(std::string_view message, std::string_view phrase) {
  return message.find(phrase) != std::string_view::npos;
}

bool HasAny(std::string_view message, std::initializer_list<std::string_view> phrases) {
  for (std::string_view p : phrases) {
    if (Has(message, p)) return true;
  }
  return false;
}

}  // namespace

Status::Reason InferLegacyReason(Status::Code code, std::string_view message) {
  using R = Status::Reason;
  if (code == Status::Code::kOk) return R::kNone;
  // First the phrases that outrank the code (a client's "outcome unknown" wraps any code).
  if (Has(message, "outcome unknown")) return R::kOutcomeUnknown;
  if (Has(message, "write not applied")) return R::kNotApplied;
  if (Has(message, "no majority")) return R::kNoMajority;
  if (Has(message, "after its client stopped waiting; dropped")) return R::kLate;
  if (Has(message, "write quorum not reached")) return R::kQuorumMissed;
  if (message.rfind("client timestamp rejected", 0) == 0) return R::kClockRejected;
  if (HasAny(message, {"connection closed by the server", "connection reset", "broken pipe",
                       "connection lost"})) {
    return R::kLostInFlight;
  }
  if (code == Status::Code::kFailedPrecondition && message.rfind("unformed:", 0) == 0) {
    return R::kUnformed;
  }
  if (code == Status::Code::kUnavailable && Has(message, "unformed")) return R::kUnformed;
  if (code == Status::Code::kUnavailable && Has(message, "is starting")) return R::kStarting;
  if (code == Status::Code::kFailedPrecondition &&
      (message.rfind("request for cluster ", 0) == 0 || Has(message, "for another cluster"))) {
    return R::kWrongCluster;
  }
  if (code == Status::Code::kAborted && message.rfind("superseded", 0) == 0) {
    return R::kSuperseded;
  }
  if (code == Status::Code::kAborted && Has(message, "not the expected")) {
    return R::kUnexpectedEpoch;
  }
  if (Has(message, "does not lead")) return R::kNotLeader;
  if (Has(message, "connection refused")) return R::kUnreachable;
  return R::kNone;
}

}  // namespace shardkv::net
