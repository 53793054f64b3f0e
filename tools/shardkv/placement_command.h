// `shardkv placement ...`: the placement lab's commands.
#pragma once

#include <CLI/CLI.hpp>

namespace shardkv::cli {

// Adds `placement` and its subcommand `compare` to `app`. When a command runs (during
// app.parse()), it stores its exit code in *exit_code, which must outlive the parse.
void RegisterPlacementCommands(CLI::App& app, int* exit_code);

}  // namespace shardkv::cli
