// The bulk commands: load (write N deterministic keys) and verify (read them back and check).
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterLoadCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
