#include "shardkv/mutation_outcome.h"

namespace shardkv {

std::optional<MutationOutcome> ReasonOutcome(Status::Reason reason) {
  switch (reason) {
    case Status::Reason::kNone:
    case Status::Reason::kCount:
      return std::nullopt;
    // Sent, and no definite answer: an earlier attempt or a map commit whose acks are unknown,
    // a connection lost with the request in flight (rpc_client.h), a write quorum missed while
    // the replicas that acked keep the value and hints may spread it (docs/semantics.md "A
    // failed write").
    case Status::Reason::kOutcomeUnknown:
    case Status::Reason::kLostInFlight:
    case Status::Reason::kQuorumMissed:
      return MutationOutcome::kIndeterminate;
    // Known to have changed nothing: a replica holds a newer version, a side without a majority,
    // a node that serves no keys or belongs elsewhere, a newer map, a request dropped unrun
    // because its client had stopped waiting, a refusal by policy or of the clock, a leader
    // change, a node nothing was sent to, a node that refused to start without a rebuild.
    case Status::Reason::kNotApplied:
    case Status::Reason::kNoMajority:
    case Status::Reason::kUnformed:
    case Status::Reason::kStarting:
    case Status::Reason::kSuperseded:
    case Status::Reason::kLate:
    case Status::Reason::kWrongCluster:
    case Status::Reason::kRefusedByPolicy:
    case Status::Reason::kNotLeader:
    case Status::Reason::kClockRejected:
    case Status::Reason::kUnexpectedEpoch:
    case Status::Reason::kUnreachable:
    case Status::Reason::kNeedsRebuild:
    case Status::Reason::kWrongType:
      return MutationOutcome::kNotApplied;
  }
  return std::nullopt;
}

MutationOutcome ClassifyMutation(const Status& s) {
  if (s.ok()) return MutationOutcome::kApplied;
  if (auto by_reason = ReasonOutcome(s.reason())) return *by_reason;
  switch (s.code()) {
    case Status::Code::kTimeout:
      // A timeout after the request was sent (one dropped unrun says kLate).
    case Status::Code::kCorruption:
    case Status::Code::kInternal:
    case Status::Code::kIOError:
      // A garbled reply or an internal failure says nothing about what ran before it.
      return MutationOutcome::kIndeterminate;
    default:
      // Refusals: bad input, a failed precondition, "... refused" (Aborted), a stale epoch, a
      // refused secret, not found, a node that could not be reached or would not serve. The
      // node declined before changing anything.
      return MutationOutcome::kNotApplied;
  }
}

std::string_view MutationOutcomeName(MutationOutcome outcome) {
  switch (outcome) {
    case MutationOutcome::kApplied:
      return "applied";
    case MutationOutcome::kNotApplied:
      return "not_applied";
    case MutationOutcome::kIndeterminate:
      break;
  }
  return "indeterminate";
}

}  // namespace shardkv
