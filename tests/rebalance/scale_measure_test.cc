// Measurements behind kMaxShards / kMaxVnodes (hidden: run with the tag [.measure]). Prints the
// time of each placement step at a given size; asserts nothing about time.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <iostream>

#include "clustermap/cluster_map_builder.h"
#include "rebalance/plan.h"
#include "shardkv/cluster_map.h"

using namespace shardkv;
using namespace shardkv::rebalance;

namespace {

double Ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since)
      .count();
}

void Measure(PlacementMode mode, uint32_t size, uint32_t nodes) {
  ClusterParams p;
  p.mode = mode;
  if (mode == PlacementMode::kRing) {
    p.vnodes = size;
  } else {
    p.shards = size;
  }
  std::vector<ClusterNode> members;
  for (uint32_t id = 1; id <= nodes; ++id) {
    members.push_back({id, "127.0.0.1:" + std::to_string(7000 + id), 1.0, NodeState::kUp});
  }
  auto t = std::chrono::steady_clock::now();
  auto map = ClusterMap::Create(1, p, members, 1);
  REQUIRE(map.ok());
  const double create = Ms(t);
  t = std::chrono::steady_clock::now();
  auto joined =
      clustermap::WithNodeJoining(*map, {nodes + 1, "127.0.0.1:9999", 1.0, NodeState::kJoining});
  REQUIRE(joined.ok());
  const double join = Ms(t);
  t = std::chrono::steady_clock::now();
  const std::string bytes = joined->Encode();
  const double encode = Ms(t);
  t = std::chrono::steady_clock::now();
  auto decoded = ClusterMap::Decode(bytes);
  REQUIRE(decoded.ok());
  const double decode = Ms(t);
  t = std::chrono::steady_clock::now();
  const auto all = AllRanges(*joined);
  const auto moving = MovingRanges(*joined);
  const auto tasks = AssignTasks(moving);
  const double plan = Ms(t);
  t = std::chrono::steady_clock::now();
  REQUIRE(clustermap::WithNodeLeaving(*map, 2).ok());
  const double leave = Ms(t);
  std::cout << PlacementModeName(mode) << " size " << size << " nodes " << nodes << ": create "
            << create << " ms, join " << join << " ms, encode " << encode << " ms (" << bytes.size()
            << " bytes), decode " << decode << " ms, plan " << plan << " ms, leave " << leave
            << " ms (" << all.size() << " ranges, " << moving.size() << " moving, " << tasks.size()
            << " tasks)\n";
}

}  // namespace

TEST_CASE("cluster map: shard and vnode counts above the limits are refused", "[rebalance]") {
  std::vector<ClusterNode> one = {{1, "127.0.0.1:7001", 1.0, NodeState::kUp}};
  ClusterParams p;
  p.mode = PlacementMode::kJump;
  p.shards = kMaxShards;
  CHECK(ClusterMap::Create(1, p, one, 1).ok());
  p.shards = kMaxShards + 1;
  auto too_many = ClusterMap::Create(1, p, one, 1);
  REQUIRE_FALSE(too_many.ok());
  CHECK(too_many.status().code() == Status::Code::kInvalidArgument);
  CHECK(too_many.status().message() == "--shards " + std::to_string(kMaxShards + 1) +
                                           " exceeds the maximum " + std::to_string(kMaxShards));
  ClusterParams r;
  r.vnodes = kMaxVnodes + 1;
  auto vnodes = ClusterMap::Create(1, r, one, 1);
  REQUIRE_FALSE(vnodes.ok());
  CHECK(vnodes.status().message().find("exceeds the maximum") != std::string::npos);
  r.vnodes = kMaxVnodes;
  CHECK(ClusterMap::Create(1, r, one, 1).ok());
}

TEST_CASE("measure: placement cost by shard and vnode count", "[.measure]") {
  const char* only = std::getenv("SHARDKV_MEASURE");
  const std::string which = only ? only : "";
  if (which.empty() || which == "ring") {
    for (uint32_t v : {1000u, 10000u, 20000u, 50000u, kMaxVnodes})
      Measure(PlacementMode::kRing, v, 3);
  }
  if (which.empty() || which == "jump") {
    for (uint32_t s : {1024u, 8192u, kMaxShards}) {
      Measure(PlacementMode::kJump, s, 3);
      Measure(PlacementMode::kJump, s, 4);
    }
  }
}
