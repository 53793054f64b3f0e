// Ketama: libmemcached's weighted ketama continuum (MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED,
// libmemcached 1.1.4), byte-compatible so that the real library is the test oracle.
//
// Node names are "host" or "host:port" (port defaults to 11211; IPv6 as "[addr]" or
// "[addr]:port"); weights must be whole numbers >= 1 (libmemcached's weights are integers).
// See ../shared/reference.md for the exact spec: points per server
// floor((float)(w / total_w * 160/4 * live + 1e-10F)) * 4, computed in float32; point strings
// "host-i" for port 11211 and "host:port-i" otherwise; 4 points per MD5 digest, little-endian;
// points sorted by (value, server index); key hash = MD5(key) first 4 bytes little-endian; the
// owner is the first point >= hash, wrapping to the first point.
//
// Worked example: one server "10.0.0.1:11211" of weight 1 gets 160 points from the strings
// "10.0.0.1-0" .. "10.0.0.1-39".
//
// The float32 rounding is part of the format: weights {1 x9, 2 x5, 5 x1} give the weight-5
// server 496 points where exact arithmetic says 500. A weight so small that its server gets zero
// points is accepted, as libmemcached does: that server owns nothing and comes last in Replicas().
//
// Thread-safety: immutable after Build(); all methods are const and lock-free.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv {

class Ketama final : public Placement {
 public:
  // Errors: membership errors; a bad port; a weight that is not a whole number >= 1.
  static StatusOr<std::unique_ptr<Ketama>> Build(std::vector<NodeSpec> nodes);

  std::string_view algorithm() const override { return "ketama"; }
  // MD5(key), first 4 bytes little-endian (a 32-bit value; the high 32 bits are zero).
  uint64_t KeyToken(std::string_view key) const override;
  // Index of the server libmemcached would pick for a key whose token is `token`.
  uint32_t Owner(uint64_t token) const override;
  // The owner, then the next distinct servers clockwise on the continuum.
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override;

  size_t point_count() const { return points_.size(); }

 private:
  explicit Ketama(std::vector<NodeSpec> nodes) : Placement(std::move(nodes)) {}
  size_t PointIndex(uint32_t hash) const;  // first point >= hash, wrapping to 0

  std::vector<uint32_t> points_;  // sorted by (value, server index)
  std::vector<uint32_t> owners_;  // owners_[i]: server index of points_[i]
  // prefix_[b]: first point whose top prefix_bits_ bits are >= b; prefix_[2^bits] = size.
  std::vector<uint32_t> prefix_;
  int prefix_bits_ = 1;
  size_t servers_with_points_ = 0;
  // Servers whose weight rounded down to zero points: never owners, last in Replicas().
  std::vector<uint32_t> pointless_;
};

}  // namespace shardkv
