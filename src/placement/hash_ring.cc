#include "shardkv/hash_ring.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <string>

namespace shardkv {
namespace {

// The first index in [lo, hi) whose point is > token, or hi. Out of line and cold so that its
// setup does not crowd PointIndex's hot path, which needs it only for overfull prefix slots.
template <typename Point>
[[gnu::noinline, gnu::cold]] size_t UpperBound(const Point* points, size_t lo, size_t hi,
                                               uint64_t token) {
  return std::upper_bound(points + lo, points + hi, token,
                          [](uint64_t t, const Point& p) { return t < p.pos; }) -
         points;
}

}  // namespace

StatusOr<std::unique_ptr<HashRing>> HashRing::Build(std::vector<NodeSpec> nodes, int vnodes,
                                                    hash::HashKind hash) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  if (vnodes < 1) {
    return Status::InvalidArgument("vnodes must be >= 1, got " + std::to_string(vnodes));
  }
  std::unique_ptr<HashRing> ring(new HashRing(std::move(nodes), vnodes, hash));
  const std::vector<NodeSpec>& members = ring->nodes_;

  // Count first so the points array is allocated once, at its final size: at 1000 x 160 the
  // build is dominated by touching fresh memory, and page faults are expensive on VMs.
  std::vector<uint64_t> counts(members.size());
  uint64_t total = 0;
  for (size_t n = 0; n < members.size(); ++n) {
    const double scaled = std::round(vnodes * members[n].weight);
    counts[n] = scaled < 1 ? 1 : static_cast<uint64_t>(scaled);
    if (counts[n] > (uint64_t{1} << 26)) {
      return Status::InvalidArgument("node '" + members[n].name + "' would get " +
                                     std::to_string(counts[n]) + " vnodes; lower vnodes or weight");
    }
    total += counts[n];
  }
  if (total > UINT32_MAX / 2) return Status::InvalidArgument("too many ring points");

  // Ties at one position are broken by node name so the ring does not depend on list order;
  // ranking the names once keeps string compares out of the sort.
  std::vector<uint32_t> rank(members.size());
  {
    std::vector<uint32_t> by_name(members.size());
    std::iota(by_name.begin(), by_name.end(), 0);
    std::sort(by_name.begin(), by_name.end(),
              [&](uint32_t a, uint32_t b) { return members[a].name < members[b].name; });
    for (uint32_t r = 0; r < by_name.size(); ++r) rank[by_name[r]] = r;
  }

  // Hash straight into the final array and sort it in place: no temporary, no copies. (Separate
  // position and owner arrays look up a few percent faster, but sorting pairs for them needs a
  // 2.56 MB temporary at 1000 x 160, which doubled the build time.)
  ring->points_.Allocate(total);
  Point* const points = ring->points_.data();
  ring->owners_.Reset(points);
  size_t next = 0;
  std::string label;
  for (uint32_t n = 0; n < members.size(); ++n) {
    label.assign(members[n].name);
    label += '#';
    const size_t prefix_len = label.size();
    for (uint64_t i = 0; i < counts[n]; ++i) {
      char digits[20];
      char* end = std::to_chars(digits, digits + sizeof(digits), i).ptr;
      label.resize(prefix_len);
      label.append(digits, end);
      points[next++] = {hash::Hash64(hash, label), n};
    }
  }
  std::sort(points, points + total, [&](const Point& a, const Point& b) {
    if (a.pos != b.pos) return a.pos < b.pos;
    return rank[a.owner] < rank[b.owner];
  });
  for (size_t i = 0; i < kSentinels; ++i) points[total + i] = {UINT64_MAX, points[0].owner};

  // The smallest power of two >= the point count, so 0.5-1 points a slot: at 1000 x 160 that is
  // 2^18 slots, a 1 MB table next to 2.56 MB of points. The branchless finish below costs the
  // same whether a slot holds 0 or 4 points, and more than 4 (Poisson, mean <= 1) happens in
  // under 0.4% of slots, so a larger table buys nothing: at two slots a point (2 MB) lookups at
  // 1000 x 160 measured slower, not faster (bench/README.md, "Placement library changes").
  int bits = 1;
  while (bits < 24 && (uint64_t{1} << bits) < total) ++bits;
  const size_t slots = size_t{1} << bits;
  ring->prefix_shift_ = 64 - bits;
  ring->prefix_slots_ = slots;
  ring->prefix_ = std::make_unique_for_overwrite<uint32_t[]>(slots + 1);
  uint32_t* const prefix = ring->prefix_.get();
  size_t slot = 0;
  for (size_t i = 0; i < total; ++i) {
    const size_t point_slot = points[i].pos >> ring->prefix_shift_;
    while (slot <= point_slot) prefix[slot++] = static_cast<uint32_t>(i);
  }
  while (slot <= slots) prefix[slot++] = static_cast<uint32_t>(total);
  return ring;
}

size_t HashRing::PointIndex(uint64_t token) const {
  const size_t slot = token >> prefix_shift_;
  size_t lo = prefix_[slot];
  const size_t hi = prefix_[slot + 1];
  const Point* const points = points_.data();
  // Points in [lo, hi) share the token's top bits. A good hash leaves 0-2 of them; a clustering
  // hash (fnv1a or crc32 on "name#i") can pile many into one slot, so binary-search those.
  if (hi - lo > kSentinels) [[unlikely]] {
    lo = UpperBound(points, lo, hi, token);
  } else {
    // Count the points <= token among the next kSentinels, with no data-dependent branch (a loop
    // here mispredicted ~0.5 times a lookup). Points from hi on lie in later slots, so they are
    // > token, and the sentinels make the reads past the end safe. A sentinel counts only when
    // token == UINT64_MAX, and then the sum runs past the last point and wraps below.
    static_assert(kSentinels == 4, "the finish compares exactly kSentinels points");
    const Point* const p = points + lo;
    lo += static_cast<size_t>(p[0].pos <= token) + static_cast<size_t>(p[1].pos <= token) +
          static_cast<size_t>(p[2].pos <= token) + static_cast<size_t>(p[3].pos <= token);
  }
  return lo >= points_.size() ? 0 : lo;
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
  return (points_.size() + kSentinels) * sizeof(Point) + (prefix_slots_ + 1) * sizeof(uint32_t);
}

std::vector<HashRing::Arc> HashRing::Ranges() const {
  const size_t total = points_.size();
  std::vector<Arc> arcs;
  arcs.reserve(total + 1);
  // Token t belongs to the first point > t, so the point at index i owns [p[i-1], p[i]) and the
  // first point also owns the wrap-around [p_last, UINT64_MAX] ∪ [0, p_0).
  const uint64_t first = points_[0].pos;
  const uint32_t wrap_owner = points_[0].owner;
  if (first > 0) arcs.push_back({{0, first - 1}, wrap_owner});
  for (size_t i = 1; i < total; ++i) {
    if (points_[i].pos == points_[i - 1].pos) continue;  // an empty arc
    arcs.push_back({{points_[i - 1].pos, points_[i].pos - 1}, points_[i].owner});
  }
  arcs.push_back({{points_[total - 1].pos, UINT64_MAX}, wrap_owner});
  return arcs;
}

}  // namespace shardkv
