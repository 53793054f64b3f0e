// The placements a ClusterMap derives from its node list (cluster_map_rep.h): building one,
// and jump mode's shard rows as node ids.
#include <algorithm>
#include <map>

#include "clustermap/cluster_map_rep.h"

namespace shardkv::clustermap {
namespace {

// "node-<id>" back to the id (ShardMap keeps names, the cluster map keeps ids).
uint32_t IdOfName(std::string_view name) {
  return static_cast<uint32_t>(std::stoul(std::string(name.substr(5))));
}

}  // namespace

// Shard rows of `sm` as node ids.
std::vector<std::vector<uint32_t>> RowsAsIds(const ShardMap& sm) {
  std::vector<std::vector<uint32_t>> rows;
  rows.reserve(static_cast<size_t>(sm.shard_count()));
  for (int32_t s = 0; s < sm.shard_count(); ++s) {
    std::vector<uint32_t> row;
    for (uint32_t idx : sm.ShardReplicas(s)) row.push_back(IdOfName(sm.nodes()[idx].name));
    rows.push_back(std::move(row));
  }
  return rows;
}

Status BuildPlacement(const ClusterParams& p, const std::vector<ClusterNode>& nodes, bool pending,
                      std::vector<std::vector<uint32_t>>* rows, PlacementView* out) {
  // kJoining: in the pending placement only; kLeaving: in the current one only.
  auto member = [pending](const ClusterNode& n) {
    return n.state != (pending ? NodeState::kLeaving : NodeState::kJoining);
  };
  std::vector<NodeSpec> specs;
  for (const ClusterNode& n : nodes) {
    if (!member(n)) continue;
    specs.push_back({PlacementName(n.id), n.weight});
    out->index_to_id.push_back(n.id);
  }
  if (specs.empty()) return Status::InvalidArgument("a placement needs at least one node");
  out->replicas = std::min<uint32_t>(p.replication_factor, static_cast<uint32_t>(specs.size()));
  if (p.mode == PlacementMode::kRing) {
    auto ring = HashRing::Build(specs, static_cast<int>(p.vnodes));
    if (!ring.ok()) return ring.status();
    out->ring = std::move(ring).value();
    return Status::OK();
  }
  if (rows->empty()) {
    auto sm =
        ShardMap::Create(specs, static_cast<int32_t>(p.shards), static_cast<int>(out->replicas));
    if (!sm.ok()) return sm.status();
    *rows = RowsAsIds(*sm);
  }
  if (rows->size() != p.shards) {
    return Status::Corruption("shard map has " + std::to_string(rows->size()) + " rows, expected " +
                              std::to_string(p.shards));
  }
  std::vector<std::vector<uint32_t>> idx_rows;
  idx_rows.reserve(rows->size());
  for (const auto& id_row : *rows) {
    std::vector<uint32_t> row;
    for (uint32_t id : id_row) {
      auto it = std::find(out->index_to_id.begin(), out->index_to_id.end(), id);
      if (it == out->index_to_id.end()) {
        return Status::Corruption("shard map names unknown node " + std::to_string(id));
      }
      row.push_back(static_cast<uint32_t>(it - out->index_to_id.begin()));
    }
    idx_rows.push_back(std::move(row));
  }
  auto built = ShardMap::FromAssignment(specs, std::move(idx_rows));
  if (!built.ok()) return built.status();
  out->shard_map = std::make_shared<const ShardMap>(std::move(built).value());
  return Status::OK();
}

// Jump mode's rows under another replica count, moving the fewest replicas: a lower count drops
// each row's last replicas (the primary stays), a higher one adds to each row the members it
// lacks with the fewest replicas per weight (ties: the lower id), shard by shard, so the counts
// stay within about one of their ideal.
std::vector<std::vector<uint32_t>> ResizedRows(const std::vector<std::vector<uint32_t>>& rows,
                                               const std::vector<ClusterNode>& nodes,
                                               uint32_t replicas) {
  std::vector<std::vector<uint32_t>> out = rows;
  std::map<uint32_t, double> load;  // replicas held, by id
  std::map<uint32_t, double> weight;
  for (const ClusterNode& n : nodes) {
    load[n.id] = 0;
    weight[n.id] = n.weight;
  }
  for (auto& row : out) {
    if (row.size() > replicas) row.resize(replicas);
    for (uint32_t id : row) load[id] += 1;
  }
  for (auto& row : out) {
    while (row.size() < replicas) {
      uint32_t best = 0;
      double best_score = 0;
      bool found = false;
      for (const auto& [id, held] : load) {
        if (std::find(row.begin(), row.end(), id) != row.end()) continue;
        const double score = (held + 1) / weight[id];
        if (!found || score < best_score) {
          best = id;
          best_score = score;
          found = true;
        }
      }
      if (!found) break;  // fewer members than replicas: Build() refuses the rows
      row.push_back(best);
      load[best] += 1;
    }
  }
  // The greedy pass can leave the last rows only nodes that are already loaded (a node cannot
  // be added to the rows it is primary of). Even it out by moving added copies only, so the
  // number of copies to stream stays the minimum: swap the most loaded node's added copy in a
  // row for the least loaded node, while that narrows the spread.
  for (size_t round = 0; round < out.size() * replicas; ++round) {
    auto per_weight = [&](uint32_t id) { return load[id] / weight[id]; };
    uint32_t hi = load.begin()->first, lo = hi;
    for (const auto& [id, held] : load) {
      if (per_weight(id) > per_weight(hi)) hi = id;
      if (per_weight(id) < per_weight(lo)) lo = id;
    }
    if ((load[hi] - 1) / weight[hi] < (load[lo] + 1) / weight[lo]) break;  // no better
    bool swapped = false;
    for (size_t s = 0; s < out.size() && !swapped; ++s) {
      auto& row = out[s];
      if (std::find(row.begin(), row.end(), lo) != row.end()) continue;
      for (size_t k = std::min(rows[s].size(), row.size()); k < row.size(); ++k) {
        if (row[k] != hi) continue;
        row[k] = lo;
        load[hi] -= 1;
        load[lo] += 1;
        swapped = true;
        break;
      }
    }
    if (!swapped) break;
  }
  return out;
}

std::vector<uint32_t> PlacementView::Replicas(uint64_t token) const {
  std::vector<uint32_t> out;
  if (ring) {
    std::vector<uint32_t> idx;
    if (!ring->Replicas(token, replicas, &idx).ok()) return out;
    for (uint32_t i : idx) out.push_back(index_to_id[i]);
  } else if (shard_map) {
    const int32_t shard = static_cast<int32_t>(token >> 32);
    if (shard >= shard_map->shard_count()) return out;
    for (uint32_t i : shard_map->ShardReplicas(shard)) out.push_back(index_to_id[i]);
  }
  return out;
}

}  // namespace shardkv::clustermap
