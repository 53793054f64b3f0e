// `shardkv rebalance watch | status | cancel | resume | throttle`: follow and steer the
// membership change that `cluster add-node|join|remove-node` began. Requests go to the nodes of
// --cluster or of the local cluster directory, and follow the node driving the change.
//
// Exit codes: watch 0 when the change is done, 1 when it failed or was cancelled, when there is
// no change, or when --timeout-s passed, 3 when no node answered at the end. status 0 when the
// query succeeded (also with no change ever: "state":"none"), 3 when no node of the cluster
// answered. cancel/resume/throttle 0 when the cluster shows the command took effect (also after
// an error reply: the status is read again), 1 when it refused (the node's reason is printed),
// 3 unreachable, a node of another cluster, or no answer and no visible effect (unknown).
#pragma once

#include <CLI/CLI.hpp>

#include "global_options.h"

namespace shardkv::cli {

// Adds the `rebalance` command family.
// REQUIRES: `globals` and `exit_code` outlive app.parse().
void RegisterRebalanceCommands(CLI::App& app, GlobalOptions* globals, int* exit_code);

}  // namespace shardkv::cli
