// Placement: which node owns a key, and which nodes hold its replicas.
//
// Every algorithm is a small immutable object built from a membership list, in the style of
// Envoy's ring_hash_lb / maglev_lb: construction validates the membership and returns a Status,
// lookups are const and lock-free, and a membership change builds a new object that the caller
// swaps in whole. Nothing here throws.
//
// A key is first turned into a 64-bit *token* (KeyToken); all lookups take the token, so callers
// that already store the token (the storage key prefix) never rehash.
//
// Node indexes returned by Owner/Replicas index nodes() of the object that answered.
//
// Per-algorithm headers: hash_ring.h, jump_hash.h, shard_map.h, maglev.h, rendezvous.h,
// ketama.h, modulo.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/hash.h"
#include "shardkv/status.h"

namespace shardkv {

struct NodeSpec {
  std::string name;
  double weight = 1.0;
};

// Checks a membership list: non-empty, no empty or duplicate names, weights finite and > 0.
Status ValidateNodes(const std::vector<NodeSpec>& nodes);

class Placement {
 public:
  virtual ~Placement() = default;
  Placement(const Placement&) = delete;
  Placement& operator=(const Placement&) = delete;

  // Short algorithm name, e.g. "ring".
  virtual std::string_view algorithm() const = 0;
  const std::vector<NodeSpec>& nodes() const { return nodes_; }
  size_t node_count() const { return nodes_.size(); }

  // The token of a user key under this algorithm's key hash.
  virtual uint64_t KeyToken(std::string_view key) const = 0;
  // Index of the node that owns `token`.
  virtual uint32_t Owner(uint64_t token) const = 0;
  // Fills *out with n distinct node indexes, the owner first.
  // Returns InvalidArgument when n is 0 or exceeds node_count().
  virtual Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const = 0;
  // Approximate heap bytes held by the lookup structures.
  virtual size_t MemoryBytes() const = 0;

  uint32_t OwnerOfKey(std::string_view key) const { return Owner(KeyToken(key)); }

 protected:
  explicit Placement(std::vector<NodeSpec> nodes) : nodes_(std::move(nodes)) {}
  Status CheckReplicaCount(size_t n) const;

  std::vector<NodeSpec> nodes_;
};

enum class Algorithm : unsigned char { kRing, kJump, kMaglev, kRendezvous, kKetama, kModulo };

StatusOr<Algorithm> ParseAlgorithm(std::string_view name);
std::string_view AlgorithmName(Algorithm algorithm);

struct PlacementOptions {
  int vnodes = 160;                             // ring: vnodes per unit of weight
  hash::HashKind hash = hash::HashKind::kXxh3;  // key (and vnode) hash; ketama always uses md5
  uint32_t maglev_table_size = 65537;           // prime, >= 100 * nodes
};

// Builds any algorithm by name; what the placement lab and tests use to treat them uniformly.
StatusOr<std::unique_ptr<Placement>> MakePlacement(Algorithm algorithm,
                                                   const std::vector<NodeSpec>& nodes,
                                                   const PlacementOptions& options = {});

}  // namespace shardkv
