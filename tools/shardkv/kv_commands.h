// Key-value commands: put, get, del and stats here; load and verify in load_commands.h.
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterKvCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
