// ClusterMap: the versioned description of a cluster that every node persists and every client
// routes by (design.md "Cluster map and membership").
//
// A map holds the cluster id, a monotonically increasing epoch, the claimant that made it, the
// placement parameters (mode, vnodes, shards, RF/W/Q), the member nodes, the shard assignment in
// jump mode, and, during a membership change, the pending placement. It is an immutable value:
// changes build a new map (With*), and copies share the derived placement objects.
//
// Tokens: in ring mode a key's token is XXH3-64(key), its position on the ring. In jump mode it
// is (shard << 32) | low32(XXH3-64(key)) with shard = JumpHash(XXH3-64(key), S), so a shard is the
// contiguous token range [s << 32, (s+1) << 32). Either way a token is the prefix of the key's
// storage key, and a placement change moves whole token ranges.
//
// Two maps with the same epoch but different content are a conflict: compare ContentHash().
//
// Thread-safety: immutable; safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv {

class HashRing;
class ShardMap;

enum class PlacementMode : uint8_t { kRing, kJump };
enum class NodeState : uint8_t { kUp, kJoining, kLeaving, kDown };

std::string_view PlacementModeName(PlacementMode mode);
StatusOr<PlacementMode> ParsePlacementMode(std::string_view name);
std::string_view NodeStateName(NodeState state);

struct ClusterNode {
  uint32_t id = 0;
  std::string address;  // host:port
  double weight = 1.0;
  NodeState state = NodeState::kUp;
  friend bool operator==(const ClusterNode&, const ClusterNode&) = default;
};

struct ClusterParams {
  PlacementMode mode = PlacementMode::kRing;
  uint32_t vnodes = 160;
  uint32_t shards = 1024;
  uint32_t replication_factor = 3;
  uint32_t write_quorum = 2;
  uint32_t read_quorum = 2;
  friend bool operator==(const ClusterParams&, const ClusterParams&) = default;
};

// The placement name of a node: vnode labels and shard-map entries use it, so it must never
// change for the life of the node. Derived from the id alone.
std::string PlacementName(uint32_t node_id);

class ClusterMap {
 public:
  static constexpr uint32_t kFormatVersion = 1;

  // A new cluster at epoch 1. Errors: no nodes, duplicate ids or addresses, weight <= 0,
  // quorums of 0 or above RF, RF of 0, vnodes or shards of 0.
  static StatusOr<ClusterMap> Create(uint64_t cluster_id, ClusterParams params,
                                     std::vector<ClusterNode> nodes, uint32_t claimant);
  // Parses an encoded map; Corruption on bad bytes, FailedPrecondition on an unknown version.
  static StatusOr<ClusterMap> Decode(std::string_view bytes);
  std::string Encode() const;
  // XXH3 of the encoding: equal epochs with different hashes are a conflict.
  uint64_t ContentHash() const;

  uint64_t cluster_id() const;
  uint64_t epoch() const;
  uint32_t claimant() const;
  const ClusterParams& params() const;
  const std::vector<ClusterNode>& nodes() const;
  // nullptr if absent.
  const ClusterNode* FindNode(uint32_t id) const;
  const ClusterNode* FindNodeByAddress(std::string_view address) const;
  // RF capped by the node count; W and Q capped by that.
  uint32_t EffectiveReplicas() const;
  uint32_t EffectiveWriteQuorum() const;
  uint32_t EffectiveReadQuorum() const;

  uint64_t TokenOf(std::string_view key) const;
  // Node ids holding `token` under the current placement, primary first, EffectiveReplicas()
  // of them.
  std::vector<uint32_t> Replicas(uint64_t token) const;

  // The placement objects (exactly one is non-null, per mode).
  const HashRing* ring() const;
  const ShardMap* shard_map() const;

  // A copy with a new epoch and claimant (the content otherwise unchanged).
  ClusterMap WithEpoch(uint64_t epoch, uint32_t claimant) const;
  // A copy whose node `id` has `state` (and, if non-empty, `address`). NotFound if absent.
  StatusOr<ClusterMap> WithNodeUpdated(uint32_t id, NodeState state,
                                       std::string_view address = {}) const;

  std::string DebugString() const;

 private:
  struct Rep;
  explicit ClusterMap(std::shared_ptr<const Rep> rep) : rep_(std::move(rep)) {}
  static StatusOr<ClusterMap> Build(std::shared_ptr<Rep> rep);

  std::shared_ptr<const Rep> rep_;
};

}  // namespace shardkv
