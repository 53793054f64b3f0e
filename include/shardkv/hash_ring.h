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
// fixed, branchless 4-point compare finishes the job: 2-3 ns at 10-100 nodes, and at 1000 x 160
// (3.6 MB, past L2) two dependent cache misses, about 6-10 ns when lookups overlap and 35-40 ns
// alone. Points are {position, owner} pairs in one flat sorted array.
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
  // A ring position and the node owning the arc that ends there. Keeping the owner next to the
  // position means the lookup's last load hits a cache line the search has just read, instead of
  // a third array: at 1000 x 160 the structure is ~3.6 MB, well past L2, so each dependent miss
  // counts.
  struct Point {
    uint64_t pos;
    uint32_t owner;
  };
  // PointIndex compares this many points past its candidate without a bounds check, which is why
  // the array carries as many sentinel points past the end.
  static constexpr size_t kSentinels = 4;

  // The sorted points, followed by kSentinels {UINT64_MAX, owner of point 0}. size() counts only
  // the real points, so point_count(), Ranges() and Replicas() never see a sentinel.
  class Points {
   public:
    void Allocate(size_t count) {
      data_ = std::make_unique_for_overwrite<Point[]>(count + kSentinels);
      size_ = count;
    }
    size_t size() const { return size_; }
    Point* data() { return data_.get(); }
    const Point* data() const { return data_.get(); }
    const Point& operator[](size_t i) const { return data_[i]; }

   private:
    std::unique_ptr<Point[]> data_;
    size_t size_ = 0;
  };
  // Owner() reads owners_[i]; the owners live inside points_, so this is a view of them. It holds
  // the array itself rather than &points_ to save Owner() a dependent load. Build() sets it once
  // the points are allocated, and they never move after that.
  class OwnerView {
   public:
    uint32_t operator[](size_t i) const { return points_[i].owner; }
    void Reset(const Point* points) { points_ = points; }

   private:
    const Point* points_ = nullptr;
  };

  HashRing(std::vector<NodeSpec> nodes, int vnodes, hash::HashKind hash)
      : Placement(std::move(nodes)), vnodes_(vnodes), hash_(hash) {}
  // Index of the first point > token, wrapping to 0.
  size_t PointIndex(uint64_t token) const;

  int vnodes_;
  hash::HashKind hash_;
  Points points_;
  OwnerView owners_;
  // prefix_[b] = index of the first point whose top bits are >= b, for b in [0, 2^bits]; the
  // last entry is point_count().
  std::unique_ptr<uint32_t[]> prefix_;
  size_t prefix_slots_ = 0;  // 2^bits
  int prefix_shift_ = 64;    // 64 - bits
};

}  // namespace shardkv
