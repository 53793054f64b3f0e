// `shardkv hset`, `hget`, `hdel`, `hgetall`: hashes through the native client (design.md
// "Hashes"), as Redis's HSET, HGET, HDEL and HGETALL; `shardkv sadd`, `srem`, `smembers`,
// `sismember`: sets (design.md "Sets"), as Redis's SADD, SREM, SMEMBERS and SISMEMBER.
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

void RegisterHashCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);
void RegisterSetCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
