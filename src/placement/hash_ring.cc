#include "shardkv/hash_ring.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace shardkv {

StatusOr<std::unique_ptr<HashRing>> HashRing::Build(std::vector<NodeSpec> nodes, int vnodes,
                                                    hash::HashKind hash) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  if (vnodes < 1) {
    return Status::InvalidArgument("vnodes must be >= 1, got " + std::to_string(vnodes));
  }
  std::unique_ptr<HashRing> ring(new HashRing(std::move(nodes), vnodes, hash));

  struct Point {
    uint64_t pos;
    uint32_t owner;
  };
  std::vector<Point> points;
  std::string label;
  for (uint32_t n = 0; n < ring->nodes_.size(); ++n) {
    const NodeSpec& node = ring->nodes_[n];
    const double scaled = std::round(vnodes * node.weight);
    const uint64_t count = scaled < 1 ? 1 : static_cast<uint64_t>(scaled);
    if (count > (uint64_t{1} << 26)) {
      return Status::InvalidArgument("node '" + node.name + "' would get " + std::to_string(count) +
                                     " vnodes; lower vnodes or weight");
    }
    for (uint64_t i = 0; i < count; ++i) {
      label.assign(node.name);
      label += '#';
      label += std::to_string(i);
      points.push_back({hash::Hash64(hash, label), n});
    }
  }
  if (points.size() > UINT32_MAX / 2) return Status::InvalidArgument("too many ring points");
  // Ties at one position are broken by node name so the ring does not depend on list order.
  std::sort(points.begin(), points.end(), [&](const Point& a, const Point& b) {
    if (a.pos != b.pos) return a.pos < b.pos;
    return ring->nodes_[a.owner].name < ring->nodes_[b.owner].name;
  });
  ring->points_.reserve(points.size());
  ring->owners_.reserve(points.size());
  for (const Point& p : points) {
    ring->points_.push_back(p.pos);
    ring->owners_.push_back(p.owner);
  }

  // About two table slots per point keeps the expected scan under one step while the table
  // (4 bytes a slot) stays smaller than the points array itself.
  int bits = 1;
  while (bits < 24 && (size_t{1} << bits) < 2 * points.size()) ++bits;
  ring->prefix_shift_ = 64 - bits;
  const size_t slots = size_t{1} << bits;
  ring->prefix_.resize(slots + 1);
  size_t i = 0;
  for (size_t b = 0; b < slots; ++b) {
    const uint64_t slot_start = static_cast<uint64_t>(b) << ring->prefix_shift_;
    while (i < ring->points_.size() && ring->points_[i] < slot_start) ++i;
    ring->prefix_[b] = static_cast<uint32_t>(i);
  }
  ring->prefix_[slots] = static_cast<uint32_t>(ring->points_.size());
  return ring;
}

size_t HashRing::PointIndex(uint64_t token) const {
  const size_t slot = token >> prefix_shift_;
  size_t lo = prefix_[slot];
  const size_t hi = prefix_[slot + 1];
  // Points in [lo, hi) share the token's top bits. A good hash leaves 0-2 of them; a clustering
  // hash (fnv1a on "name#i") can pile many into one slot, so fall back to binary search there.
  if (hi - lo > 8) {
    lo = std::upper_bound(points_.begin() + lo, points_.begin() + hi, token) - points_.begin();
  } else {
    while (lo < hi && points_[lo] <= token) ++lo;
  }
  return lo == points_.size() ? 0 : lo;
}

Status HashRing::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  out->clear();
  const size_t start = PointIndex(token);
  const size_t total = points_.size();
  // n is small (RF), so a linear membership check on *out beats any set.
  for (size_t step = 0; step < total && out->size() < n; ++step) {
    const uint32_t owner = owners_[(start + step) % total];
    if (std::find(out->begin(), out->end(), owner) == out->end()) out->push_back(owner);
  }
  return Status::OK();
}

size_t HashRing::MemoryBytes() const {
  return points_.capacity() * sizeof(uint64_t) + owners_.capacity() * sizeof(uint32_t) +
         prefix_.capacity() * sizeof(uint32_t);
}

std::vector<HashRing::Arc> HashRing::Ranges() const {
  std::vector<Arc> arcs;
  arcs.reserve(points_.size() + 1);
  // Token t belongs to the first point > t, so the point at index i owns [p[i-1], p[i]) and the
  // first point also owns the wrap-around [p_last, UINT64_MAX] ∪ [0, p_0).
  const uint32_t wrap_owner = owners_.front();
  if (points_.front() > 0) arcs.push_back({{0, points_.front() - 1}, wrap_owner});
  for (size_t i = 1; i < points_.size(); ++i) {
    if (points_[i] == points_[i - 1]) continue;  // an empty arc
    arcs.push_back({{points_[i - 1], points_[i] - 1}, owners_[i]});
  }
  arcs.push_back({{points_.back(), UINT64_MAX}, wrap_owner});
  return arcs;
}

}  // namespace shardkv
