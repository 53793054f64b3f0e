// JudgeRebuild, the range test of `cluster start-node N --rebuild` (tools/shardkv/rebuild_check.h):
// the rebuild refuses before anything is touched unless every range the map places on the node
// has another holder that answers and may be streamed from.
#include "rebuild_check.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "shardkv/cluster_map.h"

namespace shardkv::cli {
namespace {

ClusterMap Map(uint32_t rf, uint32_t nodes, PlacementMode mode = PlacementMode::kRing) {
  ClusterParams p;
  p.mode = mode;
  p.vnodes = 16;
  p.shards = 64;
  p.replication_factor = rf;
  p.write_quorum = p.read_quorum = rf / 2 + 1;
  std::vector<ClusterNode> members;
  for (uint32_t id = 1; id <= nodes; ++id) {
    members.push_back({id, "127.0.0.1:" + std::to_string(47000 + id), 1.0, NodeState::kUp});
  }
  auto map = ClusterMap::Create(0x5eed, p, members, 1);
  REQUIRE(map.ok());
  return *map;
}

TEST_CASE("rebuild check: every range with another serving holder may be rebuilt", "[cli]") {
  for (PlacementMode mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    const ClusterMap map = Map(3, 4, mode);
    const RebuildVerdict all = JudgeRebuild(map, 3, {1, 2, 4});
    INFO(all.why);
    CHECK(all.block == RebuildBlock::kNone);
    CHECK(all.why.empty());
    // RF=3: each range of node 3 has two other holders, so any one other node down still leaves
    // one that serves.
    for (uint32_t down : {1u, 2u, 4u}) {
      std::set<uint32_t> serving = {1, 2, 4};
      serving.erase(down);
      CHECK(JudgeRebuild(map, 3, serving).block == RebuildBlock::kNone);
    }
  }
}

TEST_CASE("rebuild check: a range whose other holders do not answer refuses, naming them",
          "[cli]") {
  // RF=2 on 4 nodes: some range of node 3 is held only by node 3 and one other node.
  const ClusterMap map = Map(2, 4);
  const RebuildVerdict none = JudgeRebuild(map, 3, {});
  INFO(none.why);
  CHECK(none.block == RebuildBlock::kNoReplicaAnswers);
  CHECK_FALSE(none.why.empty());
  int refused = 0;
  for (uint32_t down : {1u, 2u, 4u}) {
    std::set<uint32_t> serving = {1, 2, 4};
    serving.erase(down);
    const RebuildVerdict v = JudgeRebuild(map, 3, serving);
    INFO("node " << down << " down: " << v.why);
    if (v.block == RebuildBlock::kNoReplicaAnswers) {
      ++refused;
      CHECK(v.why.find(std::to_string(down)) != std::string::npos);
    } else {
      CHECK(v.block == RebuildBlock::kNone);
    }
  }
  CHECK(refused > 0);  // with 16 vnodes each, node 3 shares a range with each other node
  CHECK(RebuildExitCode(RebuildBlock::kNoReplicaAnswers) == 3);
}

TEST_CASE("rebuild check: a range only the node holds, or a node not in the map, refuses",
          "[cli]") {
  const ClusterMap single = Map(1, 3);
  const RebuildVerdict sole = JudgeRebuild(single, 2, {1, 3});
  INFO(sole.why);
  CHECK(sole.block == RebuildBlock::kSoleCopy);
  CHECK(RebuildExitCode(RebuildBlock::kSoleCopy) == 2);

  const RebuildVerdict stranger = JudgeRebuild(Map(3, 3), 9, {1, 2, 3});
  INFO(stranger.why);
  CHECK(stranger.block == RebuildBlock::kNotMember);
  CHECK(stranger.why.find("forget-node 9") != std::string::npos);
  CHECK(RebuildExitCode(RebuildBlock::kNotMember) == 2);
}

}  // namespace
}  // namespace shardkv::cli
