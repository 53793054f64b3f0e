// ClusterMap's params change (WithParamsChanging, `shardkv cluster set`): the pending placement is
// the same members under the new replication factor, with the fewest copies moved, and the
// quorums an operation needs follow the stage (design.md "Changing the replication factor").
#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "clustermap/cluster_map_builder.h"
#include "shardkv/cluster_map.h"

using namespace shardkv;

namespace {

std::vector<ClusterNode> FourNodes() {
  return {{1, "127.0.0.1:7001", 1, NodeState::kUp},
          {2, "127.0.0.1:7002", 1, NodeState::kUp},
          {3, "127.0.0.1:7003", 1, NodeState::kUp},
          {4, "127.0.0.1:7004", 1, NodeState::kUp}};
}

ClusterMap MapOf(PlacementMode mode, uint32_t rf, uint32_t w, uint32_t q) {
  ClusterParams p;
  p.mode = mode;
  p.shards = 64;
  p.vnodes = 32;
  p.replication_factor = rf;
  p.write_quorum = w;
  p.read_quorum = q;
  auto m = ClusterMap::Create(7, p, FourNodes(), 1);
  REQUIRE(m.ok());
  return *m;
}

ClusterMap AtStage(const ClusterMap& m, ChangeState state) {
  ChangeRecord r;
  r.kind = ChangeKind::kParams;
  r.state = state;
  return clustermap::WithChange(m, r);
}

}  // namespace

TEST_CASE("cluster map params: a higher factor keeps every copy, a lower one keeps the first",
          "[clustermap][params]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    DYNAMIC_SECTION("mode " << PlacementModeName(mode)) {
      const ClusterMap one = MapOf(mode, 1, 1, 1);
      auto up = clustermap::WithParamsChanging(one, 3, 2, 2);
      REQUIRE(up.ok());
      REQUIRE(up->has_pending());
      CHECK(up->params().replication_factor == 1);
      CHECK(up->pending_params().replication_factor == 3);
      CHECK(up->PendingEffectiveReplicas() == 3);
      CHECK(up->PendingEffectiveWriteQuorum() == 2);
      std::map<uint32_t, int> held;  // copies per node under the new placement
      for (int i = 0; i < 2000; ++i) {
        const uint64_t t = up->TokenOf("k" + std::to_string(i));
        const auto o = up->Replicas(t);
        const auto n = up->PendingReplicas(t);
        REQUIRE(o.size() == 1);
        REQUIRE(n.size() == 3);
        CHECK(std::set<uint32_t>(n.begin(), n.end()).size() == 3);
        // The old copy stays where it is, and stays the primary: only new copies are streamed.
        CHECK(n[0] == o[0]);
        for (uint32_t id : n) ++held[id];
      }
      CHECK(held.size() == 4);
      if (mode == PlacementMode::kJump) {
        // The added copies keep the shard map balanced: 64 shards x 3 replicas over 4 nodes.
        std::map<uint32_t, int> slots;
        for (int32_t s = 0; s < 64; ++s) {
          for (uint32_t id : up->PendingReplicas(uint64_t(s) << 32)) ++slots[id];
        }
        for (const auto& [id, n] : slots) {
          INFO("node " << id);
          CHECK(n >= 47);
          CHECK(n <= 49);
        }
      }
      auto done = clustermap::WithChangeCommitted(*up);
      REQUIRE(done.ok());
      CHECK_FALSE(done->has_pending());
      CHECK(done->params().replication_factor == 3);
      CHECK(done->EffectiveWriteQuorum() == 2);
      CHECK(done->EffectiveReadQuorum() == 2);

      auto down = clustermap::WithParamsChanging(*done, 2, 2, 1);
      REQUIRE(down.ok());
      for (int i = 0; i < 500; ++i) {
        const uint64_t t = down->TokenOf("k" + std::to_string(i));
        const auto o = down->Replicas(t);
        const auto n = down->PendingReplicas(t);
        REQUIRE(n.size() == 2);
        // No copy moves: the new set is the old one's first two.
        CHECK(std::vector<uint32_t>(o.begin(), o.begin() + 2) == n);
      }
      auto cancelled = clustermap::WithChangeCancelled(*down);
      REQUIRE(cancelled.ok());
      CHECK(cancelled->params() == done->params());
      CHECK(cancelled->pending_params() == done->params());
    }
  }
}

TEST_CASE("cluster map params: the pending values survive encoding", "[clustermap][params]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    auto up = clustermap::WithParamsChanging(MapOf(mode, 1, 1, 1), 3, 2, 1);
    REQUIRE(up.ok());
    const ClusterMap staged = AtStage(*up, ChangeState::kStreaming);
    auto decoded = ClusterMap::Decode(staged.Encode());
    INFO(decoded.status().ToString());
    REQUIRE(decoded.ok());
    CHECK(decoded->ContentHash() == staged.ContentHash());
    CHECK(decoded->pending_params() == staged.pending_params());
    for (int i = 0; i < 200; ++i) {
      const uint64_t t = staged.TokenOf("k" + std::to_string(i));
      CHECK(decoded->PendingReplicas(t) == staged.PendingReplicas(t));
    }
    // Without a params change nothing new is written: the map of a membership change is
    // byte-identical to what the previous release wrote.
    auto plain = ClusterMap::Decode(MapOf(mode, 3, 2, 2).Encode());
    REQUIRE(plain.ok());
    CHECK(plain->pending_params() == plain->params());
  }
}

TEST_CASE("cluster map params: the quorums follow the stage", "[clustermap][params]") {
  auto up = clustermap::WithParamsChanging(MapOf(PlacementMode::kRing, 1, 1, 1), 3, 2, 2);
  REQUIRE(up.ok());
  // Joint writes: W of each set as configured for it; reads stay on O with O's Q.
  const ClusterMap joint = AtStage(*up, ChangeState::kStreaming);
  CHECK(joint.WriteQuorum(false) == 1);
  CHECK(joint.WriteQuorum(true) == 2);
  CHECK(joint.ReadQuorum() == 1);
  const ClusterMap read_new = AtStage(*up, ChangeState::kReadNew);
  CHECK(read_new.ReadQuorum() == 2);
  CHECK(read_new.WriteQuorum(false) == 1);
  CHECK(read_new.WriteQuorum(true) == 2);
  // New only: the write set is N (WriteReplicas' old_set), with N's W.
  const ClusterMap new_only = AtStage(*up, ChangeState::kNewOnly);
  CHECK(new_only.WriteQuorum(false) == 2);
  CHECK(new_only.ReadQuorum() == 2);
  std::vector<uint32_t> o, n;
  new_only.WriteReplicas(new_only.TokenOf("x"), &o, &n);
  CHECK(o.size() == 3);
  CHECK(n.empty());
  // Without a change every stage accessor is the configured value.
  const ClusterMap plain = MapOf(PlacementMode::kRing, 3, 2, 1);
  CHECK(plain.WriteQuorum(false) == 2);
  CHECK(plain.WriteQuorum(true) == 2);
  CHECK(plain.ReadQuorum() == 1);
}

TEST_CASE("cluster map params: refused changes", "[clustermap][params]") {
  const ClusterMap m = MapOf(PlacementMode::kJump, 3, 2, 2);
  CHECK(clustermap::WithParamsChanging(m, 3, 2, 2).status().code() ==
        Status::Code::kInvalidArgument);  // nothing changes
  CHECK(clustermap::WithParamsChanging(m, 2, 3, 2).status().code() ==
        Status::Code::kInvalidArgument);  // W above RF
  CHECK(clustermap::WithParamsChanging(m, 2, 2, 0).status().code() ==
        Status::Code::kInvalidArgument);  // Q of 0
  CHECK(clustermap::WithParamsChanging(m, 0, 1, 1).status().code() ==
        Status::Code::kInvalidArgument);  // RF of 0
  auto pending = clustermap::WithParamsChanging(m, 2, 1, 1);
  REQUIRE(pending.ok());
  CHECK(clustermap::WithParamsChanging(*pending, 1, 1, 1).status().code() ==
        Status::Code::kFailedPrecondition);
  CHECK(clustermap::WithNodeLeaving(*pending, 4).status().code() ==
        Status::Code::kFailedPrecondition);
  // An RF above the node count is configured as asked and capped in effect, as at formation.
  auto wide = clustermap::WithParamsChanging(m, 5, 3, 3);
  REQUIRE(wide.ok());
  CHECK(wide->pending_params().replication_factor == 5);
  CHECK(wide->PendingEffectiveReplicas() == 4);
}
