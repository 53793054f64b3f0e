// `shardkv repair`: a full anti-entropy repair now (Admin::Repair, design.md "Anti-entropy").
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterRepairCommand(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
