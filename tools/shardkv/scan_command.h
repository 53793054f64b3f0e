// `shardkv scan`: every key of the cluster (an unordered scan, Client::Scan), or one batch of it.
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterScanCommand(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
