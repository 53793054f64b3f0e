#include "shardkv/hash_ring.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <random>

#include "placement/test_util.h"

using namespace shardkv;
using shardkv::testing::Nodes;
using shardkv::testing::SplitMix;

namespace {

// The obvious implementation the prefix table must agree with: every point, sorted, and
// upper_bound (first point strictly after the token), wrapping.
struct NaiveRing {
  std::vector<std::pair<uint64_t, std::string>> points;
  NaiveRing(const std::vector<NodeSpec>& nodes, int vnodes, hash::HashKind kind) {
    for (const auto& n : nodes) {
      int count = std::max(1, static_cast<int>(std::lround(vnodes * n.weight)));
      for (int i = 0; i < count; ++i) {
        points.push_back({hash::Hash64(kind, n.name + "#" + std::to_string(i)), n.name});
      }
    }
    std::sort(points.begin(), points.end());
  }
  const std::string& Owner(uint64_t t) const {
    auto it = std::upper_bound(points.begin(), points.end(), t,
                               [](uint64_t v, const auto& p) { return v < p.first; });
    return it == points.end() ? points.front().second : it->second;
  }
};

}  // namespace

TEST_CASE("ring: owner agrees with a naive sorted-vector ring", "[ring]") {
  for (auto kind : {hash::HashKind::kXxh3, hash::HashKind::kCrc32, hash::HashKind::kFnv1a32,
                    hash::HashKind::kMd5}) {
    for (int vnodes : {1, 10, 160}) {
      auto nodes = Nodes(7);
      nodes[2].weight = 2.5;
      auto ring = HashRing::Build(nodes, vnodes, kind);
      REQUIRE(ring.ok());
      NaiveRing naive(nodes, vnodes, kind);
      REQUIRE((*ring)->point_count() == naive.points.size());
      SplitMix rng{42};
      std::vector<uint64_t> probes = {0, 1, UINT64_MAX, UINT64_MAX - 1};
      for (const auto& p : naive.points) {  // exact point positions and their neighbours
        probes.push_back(p.first);
        probes.push_back(p.first - 1);
        probes.push_back(p.first + 1);
      }
      for (int i = 0; i < 20000; ++i) probes.push_back(rng.Next());
      for (uint64_t t : probes) {
        INFO("hash " << hash::HashKindName(kind) << " vnodes " << vnodes << " token " << t);
        REQUIRE((*ring)->nodes()[(*ring)->Owner(t)].name == naive.Owner(t));
      }
    }
  }
}

TEST_CASE("ring: ranges tile the token space and agree with Owner", "[ring]") {
  auto ring = HashRing::Build(Nodes(5), 40);
  REQUIRE(ring.ok());
  auto arcs = (*ring)->Ranges();
  REQUIRE_FALSE(arcs.empty());
  CHECK(arcs.front().range.first == 0);
  CHECK(arcs.back().range.last == UINT64_MAX);
  for (size_t i = 0; i < arcs.size(); ++i) {
    const auto& a = arcs[i];
    REQUIRE(a.range.first <= a.range.last);
    if (i > 0) REQUIRE(a.range.first == arcs[i - 1].range.last + 1);
    CHECK((*ring)->Owner(a.range.first) == a.owner);
    CHECK((*ring)->Owner(a.range.last) == a.owner);
    if (a.range.last - a.range.first > 2) {
      CHECK((*ring)->Owner(a.range.first + (a.range.last - a.range.first) / 2) == a.owner);
    }
  }
  // The two halves of the wrapping arc belong to the same node.
  CHECK(arcs.front().owner == arcs.back().owner);
}

TEST_CASE("ring: replicas are distinct physical nodes, owner first", "[ring]") {
  auto nodes = Nodes(6);
  auto ring = HashRing::Build(nodes, 160);
  REQUIRE(ring.ok());
  SplitMix rng{7};
  std::vector<uint32_t> out;
  for (int i = 0; i < 5000; ++i) {
    const uint64_t t = rng.Next();
    for (size_t n = 1; n <= nodes.size(); ++n) {
      REQUIRE((*ring)->Replicas(t, n, &out).ok());
      REQUIRE(out.size() == n);
      CHECK(out[0] == (*ring)->Owner(t));
      std::vector<uint32_t> sorted = out;
      std::sort(sorted.begin(), sorted.end());
      CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
    }
  }
  // With one vnode per node the walk order is fully determined by the points: check that the
  // replicas are the owners of the next distinct points clockwise.
  auto one = HashRing::Build(Nodes(4), 1);
  REQUIRE(one.ok());
  auto arcs = (*one)->Ranges();
  REQUIRE((*one)->Replicas(0, 4, &out).ok());
  std::vector<uint32_t> walk;
  for (const auto& a : arcs) {
    if (std::find(walk.begin(), walk.end(), a.owner) == walk.end()) walk.push_back(a.owner);
  }
  CHECK(out == walk);
}

TEST_CASE("ring: errors come back as Status", "[ring]") {
  CHECK(HashRing::Build({}).status().IsInvalidArgument());
  CHECK(HashRing::Build({{"", 1}}).status().IsInvalidArgument());
  CHECK(HashRing::Build({{"a", 1}, {"a", 1}}).status().IsInvalidArgument());
  CHECK(HashRing::Build({{"a", 0}}).status().IsInvalidArgument());
  CHECK(HashRing::Build({{"a", -1}}).status().IsInvalidArgument());
  CHECK(HashRing::Build({{"a", std::nan("")}}).status().IsInvalidArgument());
  CHECK(HashRing::Build({{"a", 1}}, 0).status().IsInvalidArgument());
  auto ring = HashRing::Build(Nodes(3));
  REQUIRE(ring.ok());
  std::vector<uint32_t> out;
  CHECK((*ring)->Replicas(1, 4, &out).IsInvalidArgument());
  CHECK((*ring)->Replicas(1, 0, &out).IsInvalidArgument());
  auto dup = HashRing::Build({{"a", 1}, {"a", 1}});
  CHECK(dup.status().message().find("duplicate node 'a'") != std::string::npos);
}

TEST_CASE("ring: weight scales the vnode count, order of membership does not matter", "[ring]") {
  auto ring = HashRing::Build({{"a", 1}, {"b", 2}, {"c", 0.5}}, 100);
  REQUIRE(ring.ok());
  CHECK((*ring)->point_count() == 100 + 200 + 50);
  auto tiny = HashRing::Build({{"a", 0.001}}, 100);  // still at least one point
  REQUIRE(tiny.ok());
  CHECK((*tiny)->point_count() == 1);

  auto nodes = Nodes(8);
  auto reversed = nodes;
  std::reverse(reversed.begin(), reversed.end());
  auto a = HashRing::Build(nodes), b = HashRing::Build(reversed);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  SplitMix rng{1};
  for (int i = 0; i < 20000; ++i) {
    const uint64_t t = rng.Next();
    REQUIRE((*a)->nodes()[(*a)->Owner(t)].name == (*b)->nodes()[(*b)->Owner(t)].name);
  }
  CHECK((*a)->MemoryBytes() > (*a)->point_count() * 12);
}
