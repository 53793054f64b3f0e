// CopyShares: each node's share of a cluster's copies, computed one way for every caller:
// `shardkv cluster status` (its SHARE column, over the token space of the current map) and the
// change planner (share before and after, over the keys it counted). Every piece of the key
// space counts once per replica that holds it, weighted by its size, so the figures of a status
// and of a plan mean the same thing and, with evenly spread keys, agree.
//
// Thread-safety: a value; not shared between threads while Add runs.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "shardkv/cluster_map.h"

namespace shardkv {

class CopyShares {
 public:
  // Counts `weight` (tokens, or keys) once for every node id in `replicas`.
  void Add(const std::vector<uint32_t>& replicas, long double weight);
  // Node `id`'s fraction (0..1) of every copy added; 0 for a node never added, or when nothing
  // was added.
  double Fraction(uint32_t id) const;
  // Percent (0..100) per node id added.
  std::map<uint32_t, double> Percents() const;

 private:
  std::map<uint32_t, long double> held_;
  long double total_ = 0;
};

// The copies of `map` over its token space: each token range weighted by its length, counted
// for every replica (ring mode); each shard's copies (jump mode).
CopyShares TokenCopyShares(const ClusterMap& map);

// Percent of the token space (ring mode) or of the shards (jump mode) each node id owns as
// primary (the first replica).
std::map<uint32_t, double> PrimaryShares(const ClusterMap& map);

}  // namespace shardkv
