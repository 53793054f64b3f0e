#include "admin/formation.h"

#include <map>
#include <string>

#include "shardkv/stats.h"

namespace shardkv {
namespace {

std::optional<int64_t> Counter(const NodeProbe& p, std::string_view name) {
  if (!p.stats) return std::nullopt;
  auto it = p.stats->counters.find(std::string(name));
  if (it == p.stats->counters.end()) return std::nullopt;
  return it->second;
}

}  // namespace

uint32_t ReportedNodeId(const NodeProbe& probe) {
  const int64_t id = Counter(probe, stats::node_id).value_or(0);
  return id > 0 && id <= static_cast<int64_t>(UINT32_MAX) ? static_cast<uint32_t>(id) : 0;
}

Status FormableNode(const NodeProbe& p) {
  if (!p.reachable) {
    return Status::Unavailable(p.address + " did not answer" +
                               (p.error.ok() ? std::string() : " (" + p.error.message() + ")"));
  }
  if (!p.stats) return Status::Unavailable(p.address + " answered a ping but not a stats request");
  if (ReportedNodeId(p) == 0) return Status::InvalidArgument(p.address + " did not report its id");
  const std::string who = p.address + " (node " + std::to_string(ReportedNodeId(p)) + ")";
  // A formed node is refused even with a one-node map: `init` only takes unformed nodes. A node
  // that does not report `formed` (older) is formed when its map names any other node.
  const std::optional<int64_t> formed = Counter(p, admin::kFormedCounter);
  const bool in_cluster = formed ? *formed != 0 : (p.map && p.map->nodes().size() > 1);
  if (in_cluster) {
    std::string what = "already belongs to cluster ";
    what += p.map ? std::to_string(p.map->cluster_id()) : std::string("(id unknown)");
    if (p.map) {
      what += " (epoch " + std::to_string(p.map->epoch()) + ", " +
              std::to_string(p.map->nodes().size()) + " node(s))";
    }
    return Status::FailedPrecondition(who + " " + what +
                                      "; only nodes of no cluster can form a new one (a member "
                                      "leaves its cluster with 'cluster remove-node')");
  }
  // keys_approx counts memtable entries and tombstones too, so one put or delete shows.
  const int64_t keys = Counter(p, stats::keys_approx).value_or(0);
  const int64_t bytes = Counter(p, stats::bytes_approx).value_or(0);
  if (keys > 0 || bytes > 0) {
    return Status::FailedPrecondition(
        who + " holds data (about " + std::to_string(keys) + " key(s), " + std::to_string(bytes) +
        " bytes): a new cluster is formed only from empty nodes, since its data would not be "
        "placed by the new map; start the node with an empty data directory");
  }
  return Status::OK();
}

namespace admin {

bool IsUnformedError(const Status& s) {
  return s.code() == Status::Code::kFailedPrecondition && s.Is(Status::Reason::kUnformed);
}

Status CheckDistinct(const std::vector<ClusterNode>& nodes) {
  std::map<uint32_t, const ClusterNode*> ids;
  std::map<std::string, const ClusterNode*> addresses;
  for (const ClusterNode& n : nodes) {
    if (auto [it, fresh] = ids.emplace(n.id, &n); !fresh) {
      return Status::InvalidArgument("node id " + std::to_string(n.id) + " is given twice (" +
                                     it->second->address + " and " + n.address + ")");
    }
    if (auto [it, fresh] = addresses.emplace(n.address, &n); !fresh) {
      return Status::InvalidArgument("address " + n.address + " is given twice (nodes " +
                                     std::to_string(it->second->id) + " and " +
                                     std::to_string(n.id) + ")");
    }
  }
  return Status::OK();
}

Status CheckFormation(const ClusterMap& map, const std::vector<NodeProbe>& probes) {
  for (size_t i = 0; i < map.nodes().size() && i < probes.size(); ++i) {
    const ClusterNode& n = map.nodes()[i];
    const NodeProbe& p = probes[i];
    // A retry after a partial formation: the node already adopted exactly this map.
    if (p.map && p.map->cluster_id() == map.cluster_id() &&
        p.map->ContentHash() == map.ContentHash()) {
      continue;
    }
    if (Status s = FormableNode(p); !s.ok()) return s;
    if (const uint32_t reported = ReportedNodeId(p); reported != n.id) {
      return Status::FailedPrecondition(p.address + " reports node id " + std::to_string(reported) +
                                        ", not " + std::to_string(n.id));
    }
  }
  return Status::OK();
}

}  // namespace admin
}  // namespace shardkv
