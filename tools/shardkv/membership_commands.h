// `shardkv cluster add-node | join | remove-node | set`: membership changes, and (set) changes of
// the replication factor and quorums through the same transition. Each one asks a live
// member for a plan (the rebalancer's "plan" admin command), prints it (per-node shares, the
// source -> destination matrix, the moved fraction beside the ideal, the remapped keys), asks
// for confirmation, then sends "begin" and returns at once: `shardkv rebalance watch` follows
// the change to its end.
//
//   add-node   starts one more shardkv-node in the local cluster directory (next free id, the
//              other nodes' arguments) and adds it; stopped and removed again if the change is
//              not begun (--plan-only, refused, declined, or interrupted by SIGINT, SIGTERM,
//              SIGHUP or SIGPIPE)
//   join       adds an already running node, given by address
//   remove-node  removes a node (also a dead one); once the change is done, `rebalance watch`
//              or `cluster status` stops its process and marks its directory removed
//   set        --replicas/--write-quorum/--read-quorum (Admin::SetParams): a higher factor
//              streams the new copies, a lower one drops the surplus copies at cleanup
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

// Adds add-node, join, remove-node and set to the `cluster` subcommand of `app`.
// REQUIRES: RegisterClusterCommands ran; `globals` and `exit_code` outlive app.parse().
void RegisterMembershipCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
