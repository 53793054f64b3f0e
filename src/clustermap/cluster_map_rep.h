// The shared representation behind ClusterMap (cluster_map.cc builds it, cluster_map_codec.cc
// encodes it). Internal to src/clustermap.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/cluster_map.h"
#include "shardkv/hash_ring.h"
#include "shardkv/shard_map.h"

namespace shardkv::clustermap {

// Ceilings of any map, a decoded one included (Build refuses more with InvalidArgument). They are
// far above ClusterMap::Create's limits (kMaxShards, kMaxVnodes), so a map made by an older build
// keeps loading, and they bound what a corrupt or hostile map received from a peer can make a
// node allocate for its placement (2^25 ring points are 512 MiB).
inline constexpr uint32_t kMaxDecodedShards = uint32_t{1} << 20;
inline constexpr uint64_t kMaxDecodedRingPoints = uint64_t{1} << 25;

// One placement (current or pending) derived from the node list.
struct PlacementView {
  std::shared_ptr<const HashRing> ring;
  std::shared_ptr<const ShardMap> shard_map;
  std::vector<uint32_t> index_to_id;  // placement node index -> node id
  uint32_t replicas = 0;              // RF capped by this placement's node count

  std::vector<uint32_t> Replicas(uint64_t token) const;
};

// Builds the current (or `pending`) placement from the members in it. In jump mode `rows` (ids)
// are validated, or created balanced when empty.
Status BuildPlacement(const ClusterParams& p, const std::vector<ClusterNode>& nodes, bool pending,
                      std::vector<std::vector<uint32_t>>* rows, PlacementView* out);
// Shard rows of `sm` as node ids.
std::vector<std::vector<uint32_t>> RowsAsIds(const ShardMap& sm);
// Jump mode's rows under another replica count, moving the fewest replicas (a params change):
// a lower count drops each row's last replicas, a higher one adds members to each row, keeping
// the counts per weight within one of each other where the rows allow.
std::vector<std::vector<uint32_t>> ResizedRows(const std::vector<std::vector<uint32_t>>& rows,
                                               const std::vector<ClusterNode>& nodes,
                                               uint32_t replicas);

}  // namespace shardkv::clustermap

namespace shardkv {

struct ClusterMap::Rep {
  uint64_t cluster_id = 0;
  uint64_t epoch = 0;
  uint32_t claimant = 0;
  ClusterParams params;
  // Every member of either placement (kJoining: pending only; kLeaving: current only).
  std::vector<ClusterNode> nodes;
  // Jump mode: shard rows as node ids, primary first.
  std::vector<std::vector<uint32_t>> shard_rows;
  bool has_pending = false;
  std::vector<std::vector<uint32_t>> pending_shard_rows;
  // A params change: the pending placement's RF and quorums (only those differ from params).
  std::optional<ClusterParams> pending_params;
  std::optional<ChangeRecord> change;
  // Derived at Build().
  clustermap::PlacementView current;
  clustermap::PlacementView pending;
};

}  // namespace shardkv

namespace shardkv::clustermap {

// Encode/Decode live in cluster_map_codec.cc and need Rep and Build().
struct ClusterMapCodec {
  static std::string Encode(const ClusterMap::Rep& rep);
  static StatusOr<ClusterMap> Decode(std::string_view bytes);
};

}  // namespace shardkv::clustermap
