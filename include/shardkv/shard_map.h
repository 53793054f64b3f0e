// ShardMap: jump mode's second level. Jump consistent hash maps a key to one of S fixed shards
// (shard = JumpHash(hash64(key), S)); the ShardMap says which R distinct nodes hold each shard,
// primary first, like Redis Cluster's slot table but with replica sets.
//
// Balance: with weights w_i, node i's weighted ideal is S*R*w_i/sum(w) replicas and S*w_i/sum(w)
// primaries. A node holds a shard at most once, so a replica ideal above S is capped at S and
// the excess is spread over the others in proportion to weight (water-filling). Every node's
// replica count and primary count is within +-1 of its ideal.
//
// Movement: WithNodeAdded moves replicas only *to* the new node, and WithNodeRemoved moves only
// the leaving node's replicas, each in the minimum number the balance targets allow. After a
// long history of changes, shard sets can overlap so much that this cannot reach +-1 balance;
// then a few extra replicas move between other nodes (balance wins over strict minimality). A
// change of primary alone moves no data, so primaries are re-chosen freely among each shard's
// replicas (keeping the old primary where the balance allows).
//
// Worked example: S = 4, R = 2, nodes {a, b} of weight 1: every shard is {a, b} or {b, a}, two
// primaries each. Adding c (ideal 8/3 = 2.67 replicas) moves 2 or 3 replicas to c, taken from
// a and b, and leaves every other replica in place.
//
// Thread-safety: immutable; WithNode* return new objects.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv {

class ShardMap {
 public:
  static constexpr int32_t kDefaultShards = 1024;

  // Builds a balanced map. The result does not depend on the order of `nodes`.
  // Errors: membership errors; shards < 1; replicas < 1 or > nodes.
  static StatusOr<ShardMap> Create(std::vector<NodeSpec> nodes, int32_t shards = kDefaultShards,
                                   int replicas = 3);
  // Rebuilds a map from explicit assignments (as persisted in a cluster map), validating it.
  // assignment[s] lists shard s's node indexes, primary first.
  static StatusOr<ShardMap> FromAssignment(std::vector<NodeSpec> nodes,
                                           std::vector<std::vector<uint32_t>> assignment);

  // Errors: name empty or already present, weight <= 0.
  StatusOr<ShardMap> WithNodeAdded(const NodeSpec& node) const;
  // Errors: unknown name; fewer than `replicas` nodes would remain.
  StatusOr<ShardMap> WithNodeRemoved(std::string_view name) const;

  int32_t shard_count() const { return shards_; }
  int replica_count() const { return replicas_; }
  const std::vector<NodeSpec>& nodes() const { return nodes_; }
  // Node indexes of shard s's replicas, primary first. REQUIRES: 0 <= s < shard_count().
  std::span<const uint32_t> ShardReplicas(int32_t s) const {
    return {&slots_[static_cast<size_t>(s) * replicas_], static_cast<size_t>(replicas_)};
  }
  uint32_t Primary(int32_t s) const { return slots_[static_cast<size_t>(s) * replicas_]; }
  // Shard of a token in jump mode: JumpHash over the key hash.
  int32_t ShardOf(uint64_t key_hash) const;

  // Per node: how many shards it holds (any replica) and how many it leads.
  std::vector<int32_t> ReplicaCounts() const;
  std::vector<int32_t> PrimaryCounts() const;
  // Weighted ideals (fractional) for the same, after capping at S.
  std::vector<double> IdealReplicaCounts() const;
  std::vector<double> IdealPrimaryCounts() const;
  // Number of (shard, node) replica slots of `other` that this map does not have: the copies
  // a change from this map to `other` creates. Nodes are matched by name.
  int64_t CopiesToCreate(const ShardMap& other) const;

  size_t MemoryBytes() const { return slots_.capacity() * sizeof(uint32_t); }

 private:
  ShardMap(std::vector<NodeSpec> nodes, int32_t shards, int replicas)
      : nodes_(std::move(nodes)), shards_(shards), replicas_(replicas) {}
  // Reorders each row so its primary comes first, balancing primaries by weight and keeping
  // `previous`'s primary (matched by name) where the balance allows.
  void ChoosePrimaries(const ShardMap* previous);
  // Moves replicas between nodes until every count is within +-1 of its ideal (see .cc).
  void RepairBalance();

  std::vector<NodeSpec> nodes_;
  int32_t shards_;
  int replicas_;
  std::vector<uint32_t> slots_;  // shards_ * replicas_, row-major, primary first in each row
};

// Jump-mode placement as a Placement: token -> JumpHash shard -> ShardMap replica set.
// Tokens here are key hashes (KeyToken); the storage token (shard << 32 | low32) is built
// elsewhere from the same hash.
class ShardedPlacement final : public Placement {
 public:
  static StatusOr<std::unique_ptr<ShardedPlacement>> Build(
      ShardMap map, hash::HashKind hash = hash::HashKind::kXxh3);

  std::string_view algorithm() const override { return "jump-shards"; }
  uint64_t KeyToken(std::string_view key) const override { return hash::Hash64(hash_, key); }
  uint32_t Owner(uint64_t token) const override { return map_.Primary(map_.ShardOf(token)); }
  // The shard's replica set first (primary first); past R, the remaining nodes by index.
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override { return map_.MemoryBytes(); }
  const ShardMap& map() const { return map_; }

 private:
  ShardedPlacement(ShardMap map, hash::HashKind hash)
      : Placement(map.nodes()), hash_(hash), map_(std::move(map)) {}
  hash::HashKind hash_;
  ShardMap map_;
};

}  // namespace shardkv
