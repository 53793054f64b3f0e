// Key-value commands: put, get, del and stats here; load and verify in load_commands.h.
#pragma once

#include <CLI/CLI.hpp>
#include <string_view>

#include "global_options.h"

namespace shardkv::cli {

// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterKvCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

// A put, del, expire or persist of `key` that failed with `error` once the cluster was contacted
// (`sent`: the request itself went out; false when connecting failed, so nothing was sent).
// With --json prints {"key","outcome","error"} on stdout; always the error line on stderr.
// Returns the exit code: MutationExitCode when sent, else ExitCodeFor.
int FailMutation(const GlobalOptions& g, std::string_view key, const Status& error, bool sent);

}  // namespace shardkv::cli
