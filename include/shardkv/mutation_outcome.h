// MutationOutcome: whether a write, delete or cluster change took effect, as far as its caller
// can know from the Status it got back (docs/cli.md "Exit codes"; the CLI prints it as "outcome").
//
// A failed mutation is not the same as one that did nothing. It is kNotApplied when nothing was
// sent, every node refused it, or the library knows no replica kept it ("no majority", "write
// not applied", a refusal). It is kIndeterminate when the request was sent and no definite
// answer came back (a timeout after sending, a connection lost in flight, a write quorum missed
// while some replicas may hold the value, a map commit "outcome unknown"): it may or may not take
// effect, and only a later read (`get`, `rebalance status`) tells. When the wording does not
// tell the cases apart, the answer is kIndeterminate: claiming "not applied" for a write that
// lands later would be the worse mistake.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>

#include "shardkv/status.h"

namespace shardkv {

enum class MutationOutcome { kApplied, kNotApplied, kIndeterminate };

// The outcome of a mutation (put, delete, expire, a membership or rebalance command) that
// returned `status`: kApplied exactly when status.ok().
MutationOutcome ClassifyMutation(const Status& status);

// "applied", "not_applied", "indeterminate".
std::string_view MutationOutcomeName(MutationOutcome outcome);

// The phrase Client puts first in a mutation's error when an earlier attempt may have been
// applied although the last one was refused (src/client/client_core.cc); ClassifyMutation reads
// it, and so does map_committer's "epoch N outcome unknown".
inline constexpr std::string_view kOutcomeUnknown = "outcome unknown";

}  // namespace shardkv
