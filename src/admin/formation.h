// The checks Admin::FormCluster makes before it installs anything (admin.h, FormableNode): a
// new cluster is formed only from nodes that answer, belong to no cluster and hold no data, each
// listed once under the id it reports.
//
// Thread-safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "shardkv/admin.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::admin {

// The stats counter a node reports as 1 once it belongs to a cluster, 0 while unformed. Named
// here: the node side (the unformed-node change) declares it in shardkv/stats.h; a node of an
// older release does not report it, and then its map decides (FormableNode).
inline constexpr std::string_view kFormedCounter = "formed";

// `probes[i]` is what map.nodes()[i].address answered. OK when every node may adopt `map`;
// else the first refusal (in node order), naming the node.
Status CheckFormation(const ClusterMap& map, const std::vector<NodeProbe>& probes);

// A map fetch refused because the node is unformed (its message starts with "unformed:").
bool IsUnformedError(const Status& s);

// Two entries with one id or one address: InvalidArgument naming both (checked before probing).
Status CheckDistinct(const std::vector<ClusterNode>& nodes);

}  // namespace shardkv::admin
