#include "placement_lab/share_stats.h"

#include <catch2/catch.hpp>
#include <cmath>

using shardkv::NodeSpec;
using shardkv::lab::ShareStats;

TEST_CASE("share stats: seed 000's measure() on a hand-made count", "[lab][stats]") {
  std::vector<NodeSpec> nodes = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}};
  ShareStats s = ShareStats::Compute({10, 20, 30, 40}, nodes);
  CHECK(s.shares_pct == std::vector<double>{10, 20, 30, 40});
  CHECK(s.min_share_pct == 10);
  CHECK(s.max_share_pct == 40);
  CHECK(s.max_dev_pp == Approx(15));
  // Population stddev of {10,20,30,40} around the mean 25, as the seed computes it.
  CHECK(s.stddev_pp == Approx(std::sqrt(125.0)));
}

TEST_CASE("share stats: with weights each node is compared with its own ideal", "[lab][stats]") {
  std::vector<NodeSpec> nodes = {{"a", 3}, {"b", 1}};
  ShareStats s = ShareStats::Compute({750, 250}, nodes);
  CHECK(s.ideal_pct == std::vector<double>{75, 25});
  CHECK(s.max_dev_pp == Approx(0).margin(1e-12));
  CHECK(s.stddev_pp == Approx(0).margin(1e-12));
}

TEST_CASE("share stats: a node with no keys counts", "[lab][stats]") {
  // The seed's note: start every node at 0, or an idle node is missed.
  ShareStats s = ShareStats::Compute({0, 100}, {{"a", 1}, {"b", 1}});
  CHECK(s.min_share_pct == 0);
  CHECK(s.max_dev_pp == Approx(50));
}

TEST_CASE("share stats: ideal moves are the joining or leaving node's share", "[lab][stats]") {
  std::vector<NodeSpec> ten(10, NodeSpec{"n", 1});
  CHECK(shardkv::lab::IdealAddPct(ten, {"x", 1}) == Approx(100.0 / 11));
  CHECK(shardkv::lab::IdealRemovePct(ten, 5) == Approx(10));
  std::vector<NodeSpec> weighted = {{"a", 4}, {"b", 2}, {"c", 2}};
  CHECK(shardkv::lab::IdealRemovePct(weighted, 0) == Approx(50));
  CHECK(shardkv::lab::IdealAddPct(weighted, {"d", 8}) == Approx(50));
}
