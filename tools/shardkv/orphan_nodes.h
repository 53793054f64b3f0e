// Local node directories that never became members (design.md "CLI"): `cluster
// add-node` creates D/node-N and starts the node before the change that adds it begins; killed
// in between (SIGKILL, a crash), it leaves a directory of a node no map names. `cluster up`
// recognises such a node (its args carry no --cluster-id, and the live map does not name it) and
// skips it instead of failing the whole cluster; `cluster status` lists it; `cluster
// forget-node N` removes its directory, refusing for a member. A node a change took out (a done
// remove) is shown as left, and `cluster retire-node N` retires its directory, data kept.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "global_options.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {

// True if `args` were recorded for a member: they carry --cluster-id (given once the node's
// change began, or when the cluster formed). A node without it is a member only if the live map
// says so.
bool ArgsOfMember(const std::vector<std::string>& args);

// The member directories of `dir` whose node `map` does not name.
std::set<uint32_t> DirectoriesNotInMap(const ClusterMap& map, const std::string& dir);

// What `cluster up` and `cluster status` say about local node `id`, not a member of cluster
// `cluster_id`: why, and the command that removes its directory.
std::string NotMemberAdvice(uint32_t id, uint64_t cluster_id);

// What `cluster status` says about local node `id` that change `change_id` took out of the
// cluster (a done remove, a cancelled add) while its directory is not yet marked removed.
std::string LeftNodeAdvice(uint32_t id, uint64_t change_id, bool running);

// Adds `cluster forget-node ID` and `cluster retire-node ID` (stops a node that left and marks
// its directory removed, data kept). REQUIRES: the `cluster` subcommand exists.
void RegisterForgetNodeCommand(CLI::App& app, GlobalOptions* g, int* exit_code);

}  // namespace shardkv::cli
