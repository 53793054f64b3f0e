// What the live nodes of a cluster say about it, for the local launcher's checks made before it
// changes anything (a rebuild, forgetting a node directory, a restart): the newest map among the
// nodes that answer, and which members answer at the addresses that map names.
//
// Thread-safety: AskCluster uses the prober it is given (not shared while it runs).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "local_cluster.h"
#include "shardkv/admin.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {

struct ClusterView {
  std::optional<ClusterMap> map;   // the newest map of the cluster among the answers
  std::vector<std::string> seeds;  // the asked addresses that answered as nodes of the cluster
  size_t answered = 0;             // asked addresses that answered at all (any cluster)
  std::string foreign;             // "A answers as cluster Y", for the first such address
  // Members of `map` that answered at the address it names, as themselves, as nodes of the
  // cluster; and what each address answered.
  std::set<uint32_t> members_answering;
  std::map<std::string, NodeProbe> probes;
};

// Asks `addresses` (in parallel, each within `timeout`), then the members of the newest map of
// cluster `cluster_id` among their answers at the addresses the map names.
ClusterView AskCluster(uint64_t cluster_id, const std::vector<std::string>& addresses,
                       NodeProber* prober, std::chrono::milliseconds timeout);

// Whether a majority of a map's members answer: a membership change commits through them
// (design.md "Consensus"), so without it nothing can change. Commands decide on this count,
// never on the text of an error.
struct MemberMajority {
  size_t answering = 0;  // members answering at their address, as themselves, of the cluster
  size_t members = 0;
  bool held() const { return answering * 2 > members; }
  // "no majority: 1 of 3 members of cluster X answer (nodes 2, 3 do not)".
  std::string Describe(const ClusterMap& map) const;
};

// Asks every member of `map` (in parallel, each within `timeout`).
MemberMajority CountMajority(const ClusterMap& map, NodeProber* prober,
                             std::chrono::milliseconds timeout);

// The address of each local node of `dir` except `exclude`: the port it wrote, else the one it
// was launched with (nodes without either are left out).
std::vector<std::pair<uint32_t, std::string>> LocalNodeAddresses(const std::string& dir,
                                                                 const std::set<uint32_t>& exclude);

}  // namespace shardkv::cli
