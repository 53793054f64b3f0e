// CopyShares (include/shardkv/copy_shares.h).
#include "shardkv/copy_shares.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "shardkv/hash_ring.h"
#include "shardkv/shard_map.h"

namespace shardkv {

void CopyShares::Add(const std::vector<uint32_t>& replicas, long double weight) {
  for (uint32_t id : replicas) {
    held_[id] += weight;
    total_ += weight;
  }
}

double CopyShares::Fraction(uint32_t id) const {
  auto it = held_.find(id);
  if (it == held_.end() || total_ <= 0) return 0.0;
  return static_cast<double>(it->second / total_);
}

std::map<uint32_t, double> CopyShares::Percents() const {
  std::map<uint32_t, double> out;
  for (const auto& [id, held] : held_) out[id] = total_ > 0 ? Fraction(id) * 100.0 : 0.0;
  return out;
}

namespace {

// Inclusive ranges: the length is last - first + 1, in long double since the whole ring is 2^64.
long double Length(const TokenRange& r) {
  return static_cast<long double>(r.last - r.first) + 1.0L;
}

std::map<std::string, uint32_t> IdsByName(const ClusterMap& map) {
  std::map<std::string, uint32_t> out;
  for (const ClusterNode& n : map.nodes()) out[PlacementName(n.id)] = n.id;
  return out;
}

}  // namespace

CopyShares TokenCopyShares(const ClusterMap& map) {
  CopyShares shares;
  if (map.ring() != nullptr) {
    for (const HashRing::Arc& arc : map.ring()->Ranges()) {
      shares.Add(map.Replicas(arc.range.first), Length(arc.range));
    }
  } else if (const ShardMap* sm = map.shard_map()) {
    std::map<std::string, uint32_t> ids = IdsByName(map);
    const std::vector<int32_t> counts = sm->ReplicaCounts();
    for (size_t i = 0; i < counts.size() && i < sm->nodes().size(); ++i) {
      shares.Add({ids[sm->nodes()[i].name]}, counts[i]);
    }
  }
  return shares;
}

std::map<uint32_t, double> PrimaryShares(const ClusterMap& map) {
  std::map<std::string, uint32_t> ids = IdsByName(map);
  std::map<uint32_t, double> shares;
  if (const HashRing* ring = map.ring()) {
    std::map<uint32_t, long double> arcs;
    for (const HashRing::Arc& arc : ring->Ranges()) {
      arcs[ids[ring->nodes()[arc.owner].name]] += Length(arc.range);
    }
    for (const auto& [id, len] : arcs) {
      shares[id] = static_cast<double>(len / std::ldexp(1.0L, 64) * 100.0L);
    }
  } else if (const ShardMap* sm = map.shard_map()) {
    const std::vector<int32_t> primaries = sm->PrimaryCounts();
    for (size_t i = 0; i < primaries.size() && i < sm->nodes().size(); ++i) {
      shares[ids[sm->nodes()[i].name]] =
          100.0 * primaries[i] / std::max<int32_t>(1, sm->shard_count());
    }
  }
  return shares;
}

}  // namespace shardkv
