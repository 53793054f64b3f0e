// `shardkv cluster ...`: the local cluster launcher, in the spirit of Cassandra's ccm and Redis's
// create-cluster: up, status, stop-node, start-node, down. Process management lives in
// local_cluster.h; this file is the commands and what they print.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "global_options.h"

namespace shardkv::cli {

// Adds the `cluster` command family. Uses the global --dir (GlobalOptions::ClusterDir()).
// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterClusterCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

// A command that starts or stops local processes, given --cluster on the command line: reports
// the usage error (exit 2) into `exit_code` and returns true.
bool RefuseRemote(const GlobalOptions& g, const std::string& command, int* exit_code);

}  // namespace shardkv::cli
