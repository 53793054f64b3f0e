#include "shardkv/status.h"

namespace shardkv {

std::string_view Status::CodeName(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kNotFound:
      return "not found";
    case Code::kInvalidArgument:
      return "invalid argument";
    case Code::kAlreadyExists:
      return "already exists";
    case Code::kFailedPrecondition:
      return "failed precondition";
    case Code::kCorruption:
      return "corruption";
    case Code::kIOError:
      return "I/O error";
    case Code::kUnavailable:
      return "unavailable";
    case Code::kTimeout:
      return "timeout";
    case Code::kStaleEpoch:
      return "stale epoch";
    case Code::kResourceExhausted:
      return "resource exhausted";
    case Code::kAborted:
      return "aborted";
    case Code::kNotSupported:
      return "not supported";
    case Code::kInternal:
      return "internal error";
    case Code::kUnauthenticated:
      return "unauthenticated";
  }
  return "unknown";
}

std::string_view Status::ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kNone:
      return "none";
    case Reason::kNotApplied:
      return "not_applied";
    case Reason::kOutcomeUnknown:
      return "outcome_unknown";
    case Reason::kNoMajority:
      return "no_majority";
    case Reason::kUnformed:
      return "unformed";
    case Reason::kStarting:
      return "starting";
    case Reason::kSuperseded:
      return "superseded";
    case Reason::kLate:
      return "late";
    case Reason::kLostInFlight:
      return "lost_in_flight";
    case Reason::kQuorumMissed:
      return "quorum_missed";
    case Reason::kWrongCluster:
      return "wrong_cluster";
    case Reason::kRefusedByPolicy:
      return "refused_by_policy";
    case Reason::kNotLeader:
      return "not_leader";
    case Reason::kClockRejected:
      return "clock_rejected";
    case Reason::kUnexpectedEpoch:
      return "unexpected_epoch";
    case Reason::kUnreachable:
      return "unreachable";
    case Reason::kNeedsRebuild:
      return "needs_rebuild";
    case Reason::kWrongType:
      return "wrong_type";
    case Reason::kCount:
      break;
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(CodeName(code_));
  if (!message_.empty()) {
    out += ": ";
    out += message_;
  }
  return out;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  std::string m(prefix);
  m += ": ";
  m += message_;
  return Status(code_, reason_, std::move(m));
}

Status Status::WithReason(Reason reason) const {
  if (ok()) return *this;
  return Status(code_, reason, message_);
}

}  // namespace shardkv
