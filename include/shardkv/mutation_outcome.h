// MutationOutcome: whether a write, delete or cluster change took effect, as far as its caller
// can know from the Status it got back (docs/cli.md "Exit codes"; the CLI prints it as "outcome").
//
// A failed mutation is not the same as one that did nothing. It is kNotApplied when nothing was
// sent, every node refused it, or the library knows no replica kept it (reasons no_majority,
// not_applied, late, ...; a refusal). It is kIndeterminate when the request was sent and no
// definite answer came back (a timeout after sending, a connection lost in flight, a write
// quorum missed while some replicas may hold the value, a map commit whose outcome is unknown):
// it may or may not take effect, and only a later read (`get`, `rebalance status`) tells. The
// Status's reason decides (Status::Reason); without one, its code. When neither tells the cases
// apart, the answer is kIndeterminate: claiming "not applied" for a write that lands later would
// be the worse mistake.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

#include "shardkv/status.h"

namespace shardkv {

enum class MutationOutcome { kApplied, kNotApplied, kIndeterminate };

// The outcome of a mutation (put, delete, expire, a membership or rebalance command) that
// returned `status`: kApplied exactly when status.ok().
MutationOutcome ClassifyMutation(const Status& status);

// The outcome an error with `reason` has, whatever its code; nullopt for kNone (the code
// decides). Every reason but kNone has one (tests/tools/reason_mapping_test.cc).
std::optional<MutationOutcome> ReasonOutcome(Status::Reason reason);

// "applied", "not_applied", "indeterminate".
std::string_view MutationOutcomeName(MutationOutcome outcome);

// The phrase Client puts first in a mutation's error (reason kOutcomeUnknown) when an earlier
// attempt may have been applied although the last one was refused (src/client/client_core.cc).
inline constexpr std::string_view kOutcomeUnknown = "outcome unknown";

}  // namespace shardkv
