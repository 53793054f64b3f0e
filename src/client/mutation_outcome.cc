#include "shardkv/mutation_outcome.h"

#include <initializer_list>

namespace shardkv {
namespace {

bool Contains(const Status& s, std::string_view phrase) {
  return s.message().find(phrase) != std::string::npos;
}

bool ContainsAny(const Status& s, std::initializer_list<std::string_view> phrases) {
  for (std::string_view p : phrases) {
    if (Contains(s, p)) return true;
  }
  return false;
}

}  // namespace

MutationOutcome ClassifyMutation(const Status& s) {
  if (s.ok()) return MutationOutcome::kApplied;
  // The library's own verdicts first, whatever the code: map_committer.cc ("epoch N outcome
  // unknown: nodes ... accepted it"), client_core.cc (an earlier attempt may have landed),
  // coordinator.cc ("write not applied: a replica holds a newer version"), and the consensus
  // refusal of a side without a majority ("no majority: 2 of 4 voters reachable").
  if (Contains(s, kOutcomeUnknown)) return MutationOutcome::kIndeterminate;
  if (ContainsAny(s, {"write not applied", "no majority"})) return MutationOutcome::kNotApplied;
  switch (s.code()) {
    case Status::Code::kTimeout:
      // A node that got the request after its client's deadline dropped it unrun
      // (kv_service.cc LateDrop); any other timeout came after the request was sent.
      if (Contains(s, "after its client stopped waiting; dropped")) {
        return MutationOutcome::kNotApplied;
      }
      return MutationOutcome::kIndeterminate;
    case Status::Code::kUnavailable:
      // A quorum miss: the replicas that acked keep the value, and the coordinator keeps hints
      // for the others, so it may still spread (docs/semantics.md "A failed write").
      if (Contains(s, "write quorum not reached")) return MutationOutcome::kIndeterminate;
      // The connection broke with the request in flight (rpc_client.h: "may or may not have
      // been executed"); every other Unavailable is a node that could not be reached or would
      // not serve (refused connection, no map, starting, another cluster) before anything ran.
      if (ContainsAny(s, {"connection closed by the server", "connection reset", "broken pipe",
                          "connection lost"})) {
        return MutationOutcome::kIndeterminate;
      }
      return MutationOutcome::kNotApplied;
    case Status::Code::kCorruption:
    case Status::Code::kInternal:
    case Status::Code::kIOError:
      // A garbled reply or an internal failure says nothing about what ran before it.
      return MutationOutcome::kIndeterminate;
    default:
      // Refusals: bad input, a failed precondition, "... refused" (Aborted), a stale epoch, a
      // refused secret, not found. The node declined before changing anything.
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
