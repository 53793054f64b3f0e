// `shardkv incr` and `shardkv decr`: the counter operations (design.md "Counters"), as Redis's
// INCRBY and DECRBY.
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

void RegisterCounterCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
