// Plan: what a membership change moves (design.md "Rebalancing: the transition protocol", the
// plan).
//
// Diffs a map's current placement against its pending one. The result is a list of token ranges
// with their old (O) and new (N) replica sets; sets compare unordered, so a change of primary
// alone is not a move. In ring mode the ranges are the intersections of both rings' arcs (within
// one such piece every token has the same replica list), merged when adjacent pieces share O and
// N; in jump mode they are whole shards.
//
// Each destination in N \ O gets one stream piece per moving range. Its preferred source is a
// distinct leaving replica (O \ N), paired in sorted order as in Cassandra's consistent range
// movement, so every write acknowledged by a W-quorum of O reaches it; the other old replicas
// follow as fallbacks (sorted). Pieces with the same destination and source list form one stream
// task (up to kMaxRangesPerTask ranges each), so the task count follows the (source, destination)
// pairs, not the vnode or shard count: 20,000 vnodes make ~45,000 pieces but a handful of tasks.
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

// One moving range to one destination.
struct StreamPiece {
  size_t moving_index = 0;  // in the list given to AssignPieces
  TokenRange range;
  uint32_t destination = 0;
  std::vector<uint32_t> sources;  // preferred first, then the rest of O, sorted
};

// Ranges per task at most: bounds a StreamRange request (16 bytes a range) and keeps several
// tasks per pair for a large change, so a pair's streams can run in parallel.
inline constexpr size_t kMaxRangesPerTask = 4096;

struct StreamTask {
  uint64_t id = 0;  // index in the plan; stable for the change, so checkpoints can name it
  std::vector<TokenRange> ranges;      // token order, adjacent pieces merged
  std::vector<size_t> moving_indexes;  // the moving ranges it covers (for per-task counts)
  uint32_t destination = 0;
  std::vector<uint32_t> sources;  // preferred first, then the rest of O, sorted
};

// Every range of the token space with its O and N, in token order, adjacent pieces with the same
// sets merged. Without a pending placement N == O. Jump mode covers the shards' tokens only.
std::vector<MovingRange> AllRanges(const ClusterMap& map);
// The subset of AllRanges whose replica set changes (unordered).
std::vector<MovingRange> MovingRanges(const ClusterMap& map);
// One piece per (moving range, destination in N \ O), in range order.
std::vector<StreamPiece> AssignPieces(const std::vector<MovingRange>& moving);
// The pieces grouped by (destination, sources), each group split into tasks of at most
// kMaxRangesPerTask ranges; ordered by the group's first range. Deterministic for a map.
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
