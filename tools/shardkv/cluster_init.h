// `shardkv cluster init HOST:PORT,...`: forms a new cluster from running nodes anywhere, as
// `redis-cli --cluster create` does. It probes every node in parallel and refuses, before
// anything changes, a node that does not answer, that belongs to a cluster, that holds data, or
// that reports the id of another; it shows what it will form, asks for `yes` (unless --yes),
// forms epoch 1 through Admin::FormCluster (which repeats the checks), and prints the status.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "global_options.h"

namespace shardkv::cli {

struct InitFlags {
  std::vector<std::string> addresses;  // in this order; the first is the claimant
  std::string mode = "ring";
  uint32_t replicas = 0;  // 0 = default min(3, N), as `cluster up`
  uint32_t write_quorum = 0;
  uint32_t read_quorum = 0;
  uint32_t vnodes = 160;
  uint32_t shards = 1024;
  bool yes = false;
};

// Adds `init` under the `cluster` command. REQUIRES: `g` and `exit_code` outlive parsing.
void RegisterInitCommand(CLI::App* cluster, GlobalOptions* g, int* exit_code);

// Runs `cluster init`; returns the exit code.
int DoInit(const GlobalOptions& g, InitFlags f);

}  // namespace shardkv::cli
