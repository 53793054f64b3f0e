// Conventions shared by every `shardkv` subcommand: exit codes and error reporting.
#pragma once

#include <string>
#include <string_view>

#include "shardkv/mutation_outcome.h"
#include "shardkv/status.h"

namespace shardkv::cli {

// Exit codes (design.md "CLI"): scripts branch on these, so they never change meaning.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // not found, or a check failed
inline constexpr int kExitUsage = 2;        // bad arguments or bad input
inline constexpr int kExitUnreachable = 3;  // cluster unreachable, or no quorum: not applied
// A mutation was sent and no definite answer came back: it may or may not have taken effect
// (shardkv/mutation_outcome.h, kIndeterminate).
inline constexpr int kExitIndeterminate = 4;

// part / whole, 0 when whole is 0 (progress fractions).
inline double Ratio(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

// Prints "error: <message>" as exactly one line on stderr (newlines in the message become
// spaces, so a script can read the error with a single `read`). Returns `exit_code`.
int ReportError(std::string_view message, int exit_code);
int ReportError(const Status& status, int exit_code);

// `object` (one JSON object, as PlanJson or StatusJson make it) with "outcome" as its first
// field: how a mutating command's --json output says whether it took effect.
std::string WithOutcome(const std::string& object, MutationOutcome outcome);
// {"outcome":...,"error":...}: a mutating command's --json output when it failed with nothing
// else to show.
std::string OutcomeErrorJson(MutationOutcome outcome, std::string_view error);

// True when stderr is a terminal: progress output goes there only then, so logs and pipes stay
// clean.
bool StderrIsTerminal();

}  // namespace shardkv::cli
