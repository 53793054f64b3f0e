// Pieces of `cluster status` output that need no node row (cluster_status.cc keeps the rows):
// what to do about a node answering as another cluster, and the compact listener ports.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "shardkv/cluster_map.h"

namespace shardkv::cli {

// The advice after "A answers as cluster Y, not cluster X" for node `id`. `ours`: the node's own
// process runs there, so it lost its data and started afresh: a rebuild, if one can run now with
// `serving` (rebuild_check.h RebuildAdvice), else what to do first. Otherwise another process
// took its port, and a rebuild would not help: free the port, then start the node.
std::string MismatchAdvice(const std::optional<ClusterMap>& map, uint32_t id, bool ours,
                           const std::set<uint32_t>& serving);

// The port of `endpoint` alone when its host is `node_address`'s, else all of it; "-" if none.
std::string PortOnHost(const std::optional<std::string>& endpoint, const std::string& node_address);

}  // namespace shardkv::cli
