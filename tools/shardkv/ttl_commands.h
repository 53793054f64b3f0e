// Expiry commands: ttl, expire, persist (and the --ttl check `put` shares).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "global_options.h"

namespace shardkv::cli {

// "" if `seconds` is a valid TTL (> 0 and representable in ms), else why not.
std::string CheckTtlSeconds(int64_t seconds);

// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterTtlCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
