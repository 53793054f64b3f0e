// `shardkv hset`, `hget`, `hdel`, `hgetall`: hashes through the native client (design.md
// "Hashes"), as Redis's HSET, HGET, HDEL and HGETALL.
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

void RegisterHashCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
