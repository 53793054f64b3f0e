// The flags every cluster-facing command shares (design.md "CLI"): where the cluster is, the
// output format, the per-operation timeout and the consistency level.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "shardkv/client.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv::cli {

struct GlobalOptions {
  std::vector<std::string> cluster;  // --cluster host:port[,...]
  std::string dir;                   // --dir, else $SHARDKV_DIR, else ~/.shardkv/local
  bool json = false;
  uint32_t timeout_ms = 5000;
  std::string consistency = "quorum";

  // Adds the flags to `app`; subcommands see them through fallthrough.
  void Register(CLI::App& app);
  // The cluster directory after defaults.
  std::string ClusterDir() const;
  // Seeds: --cluster, else the ports of the nodes recorded in the cluster directory.
  StatusOr<std::vector<std::string>> Seeds() const;
  // Connects a client with these options.
  StatusOr<std::unique_ptr<Client>> Connect() const;
};

// Maps a failed Status to the CLI's exit codes: 1 not found / failed, 2 bad input, 3 cluster
// unreachable.
int ExitCodeFor(const Status& status);

}  // namespace shardkv::cli
