// Plan: what a membership change moves (design.md "Rebalancing", step 1).
//
// Diffs a map's current placement against its pending one. The result is a list of token ranges
// with their old (O) and new (N) replica sets; sets compare unordered, so a change of primary
// alone is not a move. In ring mode the ranges are the intersections of both rings' arcs (within
// one such piece every token has the same replica list), merged when adjacent pieces share O and
// N; in jump mode they are whole shards.
//
// Each destination in N \ O gets one stream task per moving range. Its preferred source is a
// distinct leaving replica (O \ N), paired in sorted order as in Cassandra's consistent range
// movement, so every write acknowledged by a W-quorum of O reaches it; the other old replicas
// follow as fallbacks.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "shardkv/cluster_map.h"
#include "shardkv/token_range.h"

namespace shardkv::rebalance {

struct MovingRange {
  TokenRange range;
  std::vector<uint32_t> old_set;  // primary first
  std::vector<uint32_t> new_set;  // primary first
};

struct StreamTask {
  uint64_t id = 0;  // index in the plan; stable for the change, so checkpoints can name it
  TokenRange range;
  uint32_t destination = 0;
  std::vector<uint32_t> sources;  // preferred first, then the rest of O
};

// Every range of the token space with its O and N, in token order, adjacent pieces with the same
// sets merged. Without a pending placement N == O. Jump mode covers the shards' tokens only.
std::vector<MovingRange> AllRanges(const ClusterMap& map);
// The subset of AllRanges whose replica set changes (unordered).
std::vector<MovingRange> MovingRanges(const ClusterMap& map);
// One task per (moving range, destination in N \ O), in range order.
std::vector<StreamTask> AssignTasks(const std::vector<MovingRange>& moving);

// Ranges `node` holds under the current placement, plus the pending one if include_pending,
// sorted and merged.
std::vector<TokenRange> HeldRanges(const ClusterMap& map, uint32_t node, bool include_pending);
// Ranges where `node` is a destination (in N \ O) of the map's pending change.
std::vector<TokenRange> DestinationRanges(const ClusterMap& map, uint32_t node);
// a \ b. Both sorted and non-overlapping; the result is too.
std::vector<TokenRange> Subtract(const std::vector<TokenRange>& a,
                                 const std::vector<TokenRange>& b);

}  // namespace shardkv::rebalance
