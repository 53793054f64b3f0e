// Conventions shared by every `shardkv` subcommand: exit codes and error reporting.
#pragma once

#include <string_view>

#include "shardkv/status.h"

namespace shardkv::cli {

// Exit codes (design.md "CLI"): scripts branch on these, so they never change meaning.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;       // not found, or a check failed
inline constexpr int kExitUsage = 2;        // bad arguments or bad input
inline constexpr int kExitUnreachable = 3;  // cluster unreachable

// Prints "error: <message>" as exactly one line on stderr (newlines in the message become
// spaces, so a script can read the error with a single `read`). Returns `exit_code`.
int ReportError(std::string_view message, int exit_code);
int ReportError(const Status& status, int exit_code);

// True when stderr is a terminal: progress output goes there only then, so logs and pipes stay
// clean.
bool StderrIsTerminal();

}  // namespace shardkv::cli
