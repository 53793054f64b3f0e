// What the live nodes say about their cluster (cluster_probe.h).
#include "cluster_probe.h"

#include <future>
#include <utility>

namespace shardkv::cli {
namespace {

// Probes every address at once (each probe waits up to the prober's timeout); addresses
// already in `out` are not asked again.
void ProbeEach(NodeProber* prober, const std::vector<std::string>& addresses,
               std::map<std::string, NodeProbe>* out) {
  std::vector<std::pair<std::string, std::future<NodeProbe>>> pending;
  for (const std::string& a : addresses) {
    if (a.empty() || out->count(a) != 0) continue;
    (*out)[a] = NodeProbe{};
    pending.emplace_back(a,
                         std::async(std::launch::async, [prober, a] { return prober->Probe(a); }));
  }
  for (auto& [a, f] : pending) (*out)[a] = f.get();
}

bool OfCluster(const NodeProbe& p, uint64_t cluster_id) {
  return p.reachable && p.map && p.map->cluster_id() == cluster_id;
}

}  // namespace

ClusterView AskCluster(uint64_t cluster_id, const std::vector<std::string>& addresses,
                       NodeProber* prober, std::chrono::milliseconds timeout) {
  prober->SetTimeout(timeout);
  ClusterView v;
  ProbeEach(prober, addresses, &v.probes);
  for (const std::string& a : addresses) {
    const NodeProbe& p = v.probes[a];
    if (!p.reachable) continue;
    ++v.answered;
    if (!OfCluster(p, cluster_id)) {
      if (v.foreign.empty()) {
        v.foreign = p.map
                        ? a + " answers as cluster " + std::to_string(p.map->cluster_id())
                        : a + " answers but holds no map of cluster " + std::to_string(cluster_id);
      }
      continue;
    }
    if (std::find(v.seeds.begin(), v.seeds.end(), a) == v.seeds.end()) v.seeds.push_back(a);
    if (!v.map || p.map->epoch() > v.map->epoch()) v.map = p.map;
  }
  if (!v.map) return v;
  std::vector<std::string> members;
  for (const ClusterNode& n : v.map->nodes()) members.push_back(n.address);
  ProbeEach(prober, members, &v.probes);
  for (const ClusterNode& n : v.map->nodes()) {
    const NodeProbe& p = v.probes[n.address];
    if (OfCluster(p, cluster_id) && ReportedNodeId(p) == n.id) v.members_answering.insert(n.id);
  }
  return v;
}

std::string MemberMajority::Describe(const ClusterMap& map) const {
  return "no majority: " + std::to_string(answering) + " of " + std::to_string(members) +
         " members of cluster " + std::to_string(map.cluster_id()) + " answer";
}

MemberMajority CountMajority(const ClusterMap& map, NodeProber* prober,
                             std::chrono::milliseconds timeout) {
  std::vector<std::string> addresses;
  for (const ClusterNode& n : map.nodes()) addresses.push_back(n.address);
  const ClusterView view = AskCluster(map.cluster_id(), addresses, prober, timeout);
  MemberMajority m;
  m.members = map.nodes().size();
  // Counted against the map given (the one the change starts from), whichever map answered.
  for (const ClusterNode& n : map.nodes()) {
    auto it = view.probes.find(n.address);
    if (it != view.probes.end() && it->second.reachable && it->second.map &&
        it->second.map->cluster_id() == map.cluster_id() && ReportedNodeId(it->second) == n.id) {
      ++m.answering;
    }
  }
  return m;
}

std::vector<std::pair<uint32_t, std::string>> LocalNodeAddresses(
    const std::string& dir, const std::set<uint32_t>& exclude) {
  std::vector<std::pair<uint32_t, std::string>> out;
  for (uint32_t id : ListNodeIds(dir)) {
    if (exclude.count(id) != 0) continue;
    std::optional<uint16_t> port = ReadPortFile(NodeDir(dir, id));
    if (!port) {
      if (auto args = ReadArgsFile(NodeDir(dir, id)); args.ok()) port = ListenPortInArgs(*args);
    }
    if (port && *port != 0) out.emplace_back(id, "127.0.0.1:" + std::to_string(*port));
  }
  return out;
}

}  // namespace shardkv::cli
