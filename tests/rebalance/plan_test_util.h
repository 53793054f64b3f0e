// Helpers of the rebalance plan tests (plan_test.cc, plan_tasks_test.cc): building cluster maps
// with a pending change, token samples, and set and range checks. Split out of plan_test.cc with
// its task-assignment cases so that both files share them (each file under ~500 lines).
#pragma once

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "rebalance/plan.h"
#include "shardkv/cluster_map.h"
#include "shardkv/token_range.h"

namespace shardkv::rebalance::plan_test {

inline ClusterNode Node(uint32_t id) {
  return {id, "127.0.0.1:" + std::to_string(7000 + id), 1.0, NodeState::kUp};
}

inline std::vector<ClusterNode> Nodes(uint32_t n) {
  std::vector<ClusterNode> out;
  for (uint32_t id = 1; id <= n; ++id) out.push_back(Node(id));
  return out;
}

inline ClusterParams Params(PlacementMode mode, uint32_t rf, uint32_t shards,
                            uint32_t vnodes = 160) {
  ClusterParams p;
  p.mode = mode;
  p.vnodes = vnodes;
  p.shards = shards;
  p.replication_factor = rf;
  p.write_quorum = p.read_quorum = std::min<uint32_t>(rf, 2);
  return p;
}

inline ClusterMap MustCreate(ClusterParams p, uint32_t nodes) {
  auto m = ClusterMap::Create(42, p, Nodes(nodes), 1);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

template <typename T>
T Must(StatusOr<T> s) {
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s).value();
}

inline std::vector<uint32_t> Sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

inline bool SameSet(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  return Sorted(a) == Sorted(b);
}

inline bool Has(const std::vector<uint32_t>& v, uint32_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

// a \ b, as a set.
inline std::vector<uint32_t> Minus(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
  std::vector<uint32_t> out;
  for (uint32_t x : a) {
    if (!Has(b, x)) out.push_back(x);
  }
  return Sorted(out);
}

// Random tokens valid for the map's mode (jump: inside the shards' token space).
inline std::vector<uint64_t> RandomTokens(const ClusterMap& m, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint64_t> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t t = rng();
    if (m.params().mode == PlacementMode::kJump) {
      t = ((t >> 32) % m.params().shards) << 32 | (t & 0xffffffffu);
    }
    out.push_back(t);
  }
  return out;
}

inline std::vector<uint64_t> KeyTokens(const ClusterMap& m, size_t n) {
  std::vector<uint64_t> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(m.TokenOf("key:" + std::to_string(i)));
  return out;
}

// Index of the range (sorted, non-overlapping) containing `token`, or -1.
template <typename R, typename Get>
ptrdiff_t Locate(const std::vector<R>& ranges, uint64_t token, Get get) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), token,
                             [&](uint64_t t, const R& r) { return t < get(r).first; });
  if (it == ranges.begin()) return -1;
  --it;
  return get(*it).Contains(token) ? it - ranges.begin() : -1;
}

inline ptrdiff_t LocateMoving(const std::vector<MovingRange>& ranges, uint64_t token) {
  return Locate(ranges, token, [](const MovingRange& r) -> const TokenRange& { return r.range; });
}

inline bool InRanges(const std::vector<TokenRange>& ranges, uint64_t token) {
  return Locate(ranges, token, [](const TokenRange& r) -> const TokenRange& { return r; }) >= 0;
}

// Sorted, non-overlapping, and not adjacent (merged).
inline void CheckSortedMerged(const std::vector<TokenRange>& ranges) {
  for (size_t i = 0; i < ranges.size(); ++i) {
    REQUIRE(ranges[i].Valid());
    if (i > 0) {
      REQUIRE(ranges[i - 1].last < ranges[i].first);
      CHECK(ranges[i - 1].last + 1 < ranges[i].first);
    }
  }
}

inline const char* ModeName(PlacementMode mode) {
  return mode == PlacementMode::kRing ? "ring" : "jump";
}

}  // namespace shardkv::rebalance::plan_test
