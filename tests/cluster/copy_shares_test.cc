// CopyShares (include/shardkv/copy_shares.h): the one computation of each node's share of the
// copies that `cluster status` and the change planner both use.
#include "shardkv/copy_shares.h"

#include <catch2/catch.hpp>
#include <vector>

#include "shardkv/cluster_map.h"

using namespace shardkv;

namespace {

std::vector<ClusterNode> Nodes(int n) {
  std::vector<ClusterNode> out;
  for (int i = 1; i <= n; ++i) {
    out.push_back(
        {static_cast<uint32_t>(i), "127.0.0.1:" + std::to_string(7000 + i), 1, NodeState::kUp});
  }
  return out;
}

double Sum(const std::map<uint32_t, double>& m) {
  double s = 0;
  for (const auto& [id, v] : m) s += v;
  return s;
}

}  // namespace

TEST_CASE("copy shares: every replica counts the weight once", "[placement][shares]") {
  CopyShares s;
  CHECK(s.Fraction(1) == 0.0);  // nothing added
  CHECK(s.Percents().empty());
  s.Add({1, 2}, 30);  // 60 copies: 30 each
  s.Add({2, 3}, 10);  // 20 copies: 10 each
  CHECK(s.Fraction(1) == Approx(30.0 / 80));
  CHECK(s.Fraction(2) == Approx(40.0 / 80));
  CHECK(s.Fraction(3) == Approx(10.0 / 80));
  CHECK(s.Fraction(9) == 0.0);
  CHECK(s.Percents().at(2) == Approx(50.0));
  CHECK(Sum(s.Percents()) == Approx(100.0));
}

TEST_CASE("copy shares: with as many replicas as nodes each node holds an equal share",
          "[placement][shares]") {
  for (PlacementMode mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    ClusterParams p;
    p.mode = mode;
    p.vnodes = 64;
    p.shards = 256;
    auto map = ClusterMap::Create(1, p, Nodes(3), 1);
    REQUIRE(map.ok());
    const auto shares = TokenCopyShares(*map).Percents();
    REQUIRE(shares.size() == 3);
    for (const auto& [id, pct] : shares) CHECK(pct == Approx(100.0 / 3).margin(1e-6));
  }
}

TEST_CASE("copy shares: with one replica the copies are the primaries", "[placement][shares]") {
  ClusterParams p;
  p.vnodes = 64;
  p.replication_factor = 1;
  p.write_quorum = 1;
  p.read_quorum = 1;
  auto map = ClusterMap::Create(1, p, Nodes(4), 1);
  REQUIRE(map.ok());
  const auto copies = TokenCopyShares(*map).Percents();
  const auto primaries = PrimaryShares(*map);
  REQUIRE(copies.size() == 4);
  CHECK(Sum(copies) == Approx(100.0));
  for (const auto& [id, pct] : copies) CHECK(pct == Approx(primaries.at(id)).margin(1e-6));
}
