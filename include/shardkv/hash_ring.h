// HashRing: consistent hashing on a 64-bit ring with virtual nodes (Karger et al., STOC 1997;
// vnodes as in ketama and Dynamo, DeCandia et al., SOSP 2007).
//
// Each node gets round(vnodes * weight) points (at least 1) at Hash64(hash, "name#i"). A token t
// belongs to the first point strictly after it going clockwise, so point p_i owns the arc
// [p_{i-1}, p_i) and every arc is one contiguous token range. Replicas(t, n) walks clockwise
// from there and collects the first n *distinct physical* nodes: Dynamo's preference list.
//
// Worked example: nodes {a, b}, 1 vnode each, with a#0 at 100 and b#0 at 200. Token 150 -> b
// (next point after 150 is 200); token 250 -> a (wraps to 100); Replicas(150, 2) = {b, a}.
//
// Lookup cost: a plain binary search over 160k points takes 60-120 ns (cache misses per level).
// Instead a prefix table indexed by the token's top bits gives the first candidate point, and a
// short scan finishes the job: 2-6 ns. Points are stored in a flat sorted array.
//
// Thread-safety: immutable after Build(); all methods are const and lock-free.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shardkv/placement.h"
#include "shardkv/token_range.h"

namespace shardkv {

class HashRing final : public Placement {
 public:
  struct Arc {
    TokenRange range;
    uint32_t owner;
  };

  // REQUIRES: vnodes >= 1. Errors: empty membership, empty or duplicate name, weight <= 0.
  static StatusOr<std::unique_ptr<HashRing>> Build(std::vector<NodeSpec> nodes, int vnodes = 160,
                                                   hash::HashKind hash = hash::HashKind::kXxh3);

  std::string_view algorithm() const override { return "ring"; }
  uint64_t KeyToken(std::string_view key) const override { return hash::Hash64(hash_, key); }
  uint32_t Owner(uint64_t token) const override { return owners_[PointIndex(token)]; }
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override;

  // The ring as arcs in token order, covering [0, UINT64_MAX] exactly once. The arc that wraps
  // past UINT64_MAX is split in two, so the first arc starts at 0 and the last ends at the max.
  std::vector<Arc> Ranges() const;

  size_t point_count() const { return points_.size(); }
  int vnodes() const { return vnodes_; }
  hash::HashKind hash_kind() const { return hash_; }

 private:
  HashRing(std::vector<NodeSpec> nodes, int vnodes, hash::HashKind hash)
      : Placement(std::move(nodes)), vnodes_(vnodes), hash_(hash) {}
  // Index of the first point > token, wrapping to 0.
  size_t PointIndex(uint64_t token) const;

  int vnodes_;
  hash::HashKind hash_;
  std::vector<uint64_t> points_;  // sorted ring positions
  std::vector<uint32_t> owners_;  // owners_[i] owns the arc ending at points_[i]
  // prefix_[b] = index of the first point whose top bits are >= b; size 2^prefix_bits_ + 1.
  std::vector<uint32_t> prefix_;
  int prefix_shift_ = 64;
};

}  // namespace shardkv
