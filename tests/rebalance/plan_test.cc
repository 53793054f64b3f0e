// Rebalance plan tests, part 1: the pending placement of a cluster map, the moving ranges, the
// token-space tiling and the per-node ranges (HeldRanges, DestinationRanges, Subtract). The
// task-assignment cases are in plan_tasks_test.cc; the shared helpers in plan_test_util.h.
#include "rebalance/plan.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "clustermap/cluster_map_builder.h"
#include "plan_test_util.h"
#include "shardkv/cluster_map.h"
#include "shardkv/token_range.h"

using namespace shardkv;
using namespace shardkv::rebalance;
using namespace shardkv::rebalance::plan_test;

// ---------------------------------------------------------------------------------------------
// 1. ClusterMap with a pending placement.

TEST_CASE("plan: cluster map pending placement stages", "[rebalance][plan]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    INFO("mode " << ModeName(mode));
    const ClusterMap m = MustCreate(Params(mode, 3, 256), 3);
    CHECK_FALSE(m.has_pending());
    CHECK(m.change() == nullptr);
    CHECK(m.PendingReplicas(123).empty());

    const ClusterMap j = Must(clustermap::WithNodeJoining(m, {4, "127.0.0.1:7004", 1}));
    CHECK(j.has_pending());
    CHECK(j.change() == nullptr);  // a pending change without a record yet: joint writes
    REQUIRE(j.FindNode(4) != nullptr);
    CHECK(j.FindNode(4)->state == NodeState::kJoining);
    CHECK(j.nodes().size() == 4);
    CHECK(j.EffectiveReplicas() == 3);
    CHECK(j.PendingEffectiveReplicas() == 3);

    // The record's state is the stage (one enum): streaming and failed write to both and read
    // from O; read_new reads from N; new_only and cleanup use N only.
    auto at = [&](ChangeState state) {
      ChangeRecord rec;
      rec.change_id = 77;
      rec.state = state;
      return clustermap::WithChange(j, rec);
    };
    const ClusterMap streaming = at(ChangeState::kStreaming);
    const ClusterMap failed = at(ChangeState::kFailed);
    const ClusterMap read_new = at(ChangeState::kReadNew);
    const ClusterMap new_only = at(ChangeState::kNewOnly);
    const ClusterMap cleanup = at(ChangeState::kCleanup);
    REQUIRE(read_new.change() != nullptr);
    CHECK(read_new.change()->state == ChangeState::kReadNew);

    const auto tokens = RandomTokens(m, 2000, 7);
    size_t pending_has_4 = 0;
    size_t differing = 0;
    for (uint64_t t : tokens) {
      const auto o = j.Replicas(t);
      const auto n = j.PendingReplicas(t);
      REQUIRE(o.size() == 3);
      REQUIRE(n.size() == 3);
      CHECK(o == m.Replicas(t));
      CHECK_FALSE(Has(o, 4));
      if (Has(n, 4)) ++pending_has_4;
      const bool differs = !SameSet(o, n);
      if (differs) ++differing;
      CHECK(j.ReadReplicas(t) == o);
      CHECK(streaming.ReadReplicas(t) == o);
      CHECK(failed.ReadReplicas(t) == o);
      CHECK(read_new.ReadReplicas(t) == n);
      CHECK(new_only.ReadReplicas(t) == n);
      CHECK(cleanup.ReadReplicas(t) == n);
      for (const ClusterMap* joint : {&j, &streaming, &failed, &read_new}) {
        std::vector<uint32_t> ws_old, ws_new;
        joint->WriteReplicas(t, &ws_old, &ws_new);
        CHECK(ws_old == o);
        if (differs) {
          CHECK(ws_new == n);
        } else {
          CHECK(ws_new.empty());
        }
      }
      for (const ClusterMap* only_new : {&new_only, &cleanup}) {
        std::vector<uint32_t> ws_old{99}, ws_new{99};
        only_new->WriteReplicas(t, &ws_old, &ws_new);
        CHECK(ws_old == n);
        CHECK(ws_new.empty());
      }
      // Fencing: a node holds what it has now or is pending for.
      for (uint32_t id = 1; id <= 4; ++id) CHECK(j.Holds(id, t) == (Has(o, id) || Has(n, id)));
      CHECK_FALSE(m.Holds(4, t));
    }
    CHECK(pending_has_4 > 0);
    CHECK(differing > 0);
    CHECK(differing < tokens.size());

    // Encode/Decode keeps the pending rows and the record (so the stage).
    const ClusterMap& detailed = read_new;
    const ClusterMap back = Must(ClusterMap::Decode(detailed.Encode()));
    CHECK(back.ContentHash() == detailed.ContentHash());
    CHECK(back.ContentHash() != j.ContentHash());
    CHECK(back.ContentHash() != new_only.ContentHash());
    CHECK(back.has_pending());
    REQUIRE(back.change() != nullptr);
    CHECK(back.change()->state == ChangeState::kReadNew);
    CHECK(back.change()->change_id == 77);
    CHECK(back.nodes() == detailed.nodes());
    for (uint64_t t : tokens) {
      CHECK(back.Replicas(t) == detailed.Replicas(t));
      CHECK(back.PendingReplicas(t) == detailed.PendingReplicas(t));
    }
    if (mode == PlacementMode::kJump) {
      REQUIRE(back.pending_shard_map() != nullptr);
      for (uint64_t s = 0; s < 256; ++s) {
        CHECK(back.PendingReplicas(s << 32) == detailed.PendingReplicas(s << 32));
      }
    }

    // Commit: 4 up, current == old pending.
    const ClusterMap committed = Must(clustermap::WithChangeCommitted(detailed));
    CHECK_FALSE(committed.has_pending());
    REQUIRE(committed.change() != nullptr);  // kept after the change completes
    CHECK(committed.change()->change_id == 77);
    for (uint64_t t : tokens) CHECK(committed.ReadReplicas(t) == committed.Replicas(t));
    REQUIRE(committed.FindNode(4) != nullptr);
    CHECK(committed.FindNode(4)->state == NodeState::kUp);
    for (uint64_t t : tokens) CHECK(committed.Replicas(t) == j.PendingReplicas(t));
    const ClusterMap committed_back = Must(ClusterMap::Decode(committed.Encode()));
    CHECK(committed_back.ContentHash() == committed.ContentHash());

    // Cancel: the original placement.
    const ClusterMap cancelled = Must(clustermap::WithChangeCancelled(j));
    CHECK_FALSE(cancelled.has_pending());
    CHECK(cancelled.FindNode(4) == nullptr);
    CHECK(cancelled.nodes() == m.nodes());
    for (uint64_t t : tokens) CHECK(cancelled.Replicas(t) == m.Replicas(t));

    // Leaving.
    const ClusterMap l = Must(clustermap::WithNodeLeaving(m, 2));
    CHECK(l.has_pending());
    REQUIRE(l.FindNode(2) != nullptr);
    CHECK(l.FindNode(2)->state == NodeState::kLeaving);
    CHECK(l.PendingEffectiveReplicas() == 2);
    for (uint64_t t : tokens) {
      CHECK(l.Replicas(t) == m.Replicas(t));
      CHECK_FALSE(Has(l.PendingReplicas(t), 2));
    }
    // Round trip of a change whose effective RF shrinks (jump: a rebuilt pending shard map).
    const ClusterMap l_back = Must(ClusterMap::Decode(l.Encode()));
    CHECK(l_back.ContentHash() == l.ContentHash());
    CHECK(l_back.PendingEffectiveReplicas() == 2);
    for (uint64_t t : tokens) CHECK(l_back.PendingReplicas(t) == l.PendingReplicas(t));
    const ClusterMap gone = Must(clustermap::WithChangeCommitted(l));
    CHECK(gone.FindNode(2) == nullptr);
    CHECK(gone.nodes().size() == 2);
    CHECK(gone.EffectiveReplicas() == 2);
    for (uint64_t t : tokens) {
      CHECK_FALSE(Has(gone.Replicas(t), 2));
      CHECK(gone.Replicas(t) == l.PendingReplicas(t));
    }
    const ClusterMap l_cancel = Must(clustermap::WithChangeCancelled(l));
    CHECK(l_cancel.nodes() == m.nodes());
    for (uint64_t t : tokens) CHECK(l_cancel.Replicas(t) == m.Replicas(t));

    // Errors.
    CHECK(clustermap::WithNodeJoining(j, {5, "127.0.0.1:7005", 1}).status().code() ==
          Status::Code::kFailedPrecondition);
    CHECK(clustermap::WithNodeLeaving(j, 1).status().code() == Status::Code::kFailedPrecondition);
    CHECK(clustermap::WithNodeJoining(m, {1, "127.0.0.1:7009", 1}).status().IsInvalidArgument());
    CHECK(clustermap::WithNodeJoining(m, {9, "127.0.0.1:7001", 1}).status().IsInvalidArgument());
    CHECK(clustermap::WithNodeJoining(m, {9, "127.0.0.1:7009", 0}).status().IsInvalidArgument());
    CHECK(clustermap::WithNodeLeaving(m, 9).status().IsNotFound());
    CHECK(clustermap::WithChangeCommitted(m).status().code() == Status::Code::kFailedPrecondition);
    CHECK(clustermap::WithChangeCancelled(m).status().code() == Status::Code::kFailedPrecondition);
    const ClusterMap single = MustCreate(Params(mode, 1, 256), 1);
    CHECK(clustermap::WithNodeLeaving(single, 1).status().code() ==
          Status::Code::kFailedPrecondition);
  }
}

// ---------------------------------------------------------------------------------------------
// 2. Movement counted independently per key vs. via MovingRanges.

namespace {

struct Scenario {
  PlacementMode mode;
  uint32_t rf;
  bool add;  // add 3 -> 4, else remove 4 -> 3
};

}  // namespace

TEST_CASE("plan: moving ranges match per-key movement and are near minimal", "[rebalance][plan]") {
  constexpr size_t kKeys = 100000;
  std::vector<Scenario> scenarios;
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    for (uint32_t rf : {3u, 1u}) {
      for (bool add : {true, false}) scenarios.push_back({mode, rf, add});
    }
  }
  for (const Scenario& sc : scenarios) {
    const std::string name = std::string(ModeName(sc.mode)) + " rf=" + std::to_string(sc.rf) +
                             (sc.add ? " add 3->4" : " remove 4->3");
    INFO(name);
    const ClusterParams p = Params(sc.mode, sc.rf, 1024, 160);
    const ClusterMap base = MustCreate(p, sc.add ? 3 : 4);
    const uint32_t moved_node = 4;
    const ClusterMap map = sc.add ? Must(clustermap::WithNodeJoining(base, Node(moved_node)))
                                  : Must(clustermap::WithNodeLeaving(base, moved_node));
    const auto moving = MovingRanges(map);
    REQUIRE_FALSE(moving.empty());
    for (const auto& r : moving) REQUIRE_FALSE(SameSet(r.old_set, r.new_set));

    uint64_t copies = 0, remapped = 0;              // independent
    uint64_t range_copies = 0, range_remapped = 0;  // via MovingRanges
    size_t not_minimal = 0, mismatched_sets = 0, misplaced = 0;
    for (size_t i = 0; i < kKeys; ++i) {
      const uint64_t t = map.TokenOf("key:" + std::to_string(i));
      const auto o = map.Replicas(t);
      const auto n = map.PendingReplicas(t);
      const auto gained = Minus(n, o);
      const auto lost = Minus(o, n);
      const bool changed = !SameSet(o, n);
      copies += gained.size();
      if (changed) ++remapped;
      // (d) minimality: on add only the new node gains; on remove only the leaving node loses.
      if (sc.add) {
        if (!(gained.empty() || gained == std::vector<uint32_t>{moved_node})) ++not_minimal;
      } else {
        if (!(lost.empty() || lost == std::vector<uint32_t>{moved_node})) ++not_minimal;
      }
      // (a), (b)
      const ptrdiff_t idx = LocateMoving(moving, t);
      if (idx >= 0) {
        const MovingRange& r = moving[static_cast<size_t>(idx)];
        range_copies += Minus(r.new_set, r.old_set).size();
        ++range_remapped;
        if (r.old_set != o || r.new_set != n) ++mismatched_sets;
      }
      if ((idx >= 0) != changed) ++misplaced;
    }
    CHECK(range_copies == copies);
    CHECK(range_remapped == remapped);
    CHECK(misplaced == 0);
    CHECK(mismatched_sets == 0);
    CHECK(not_minimal == 0);

    const double fraction = static_cast<double>(copies) / (static_cast<double>(kKeys) * sc.rf);
    const double ideal = sc.add ? 1.0 / 4 : 1.0 / 4;  // 1/(n+1) adding to n=3; 1/n removing n=4
    const double slack = sc.mode == PlacementMode::kRing ? 1.3 : 1.1;
    std::cout << "[plan] " << name << ": copies " << copies << " remapped " << remapped
              << " moving ranges " << moving.size() << " fraction " << fraction << " (ideal "
              << ideal << ", ratio " << fraction / ideal << ")\n";
    WARN(name << ": moved fraction " << fraction << " ideal " << ideal << " ratio "
              << fraction / ideal);
    CHECK(fraction <= ideal * slack);
    CHECK(fraction >= ideal / slack);
  }
}

// ---------------------------------------------------------------------------------------------
// 3. AllRanges tiles the token space.

TEST_CASE("plan: AllRanges covers the token space exactly once", "[rebalance][plan]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    INFO("mode " << ModeName(mode));
    const uint32_t shards = 256;
    const ClusterMap m = MustCreate(Params(mode, 3, shards, 64), 3);
    const ClusterMap joining = Must(clustermap::WithNodeJoining(m, Node(4)));
    const ClusterMap leaving = Must(clustermap::WithNodeLeaving(m, 1));
    for (const ClusterMap* map : {&m, &joining, &leaving}) {
      const auto all = AllRanges(*map);
      REQUIRE_FALSE(all.empty());
      CHECK(all.front().range.first == 0);
      if (mode == PlacementMode::kRing) {
        CHECK(all.back().range.last == UINT64_MAX);
      } else {
        CHECK(all.back().range.last == (uint64_t{shards} << 32) - 1);
        CHECK(all.size() == shards);  // whole shards, never merged
      }
      for (size_t i = 0; i < all.size(); ++i) {
        const MovingRange& r = all[i];
        REQUIRE(r.range.Valid());
        if (i > 0) REQUIRE(all[i - 1].range.last + 1 == r.range.first);
        // Constant sets over the piece: check both ends.
        CHECK(map->Replicas(r.range.first) == r.old_set);
        CHECK(map->Replicas(r.range.last) == r.old_set);
        const auto n = map->has_pending() ? map->PendingReplicas(r.range.last) : r.old_set;
        CHECK(n == r.new_set);
        if (mode == PlacementMode::kRing && i > 0) {
          // Merged: adjacent pieces differ in O or N.
          CHECK((all[i - 1].old_set != r.old_set || all[i - 1].new_set != r.new_set));
        }
      }
      if (!map->has_pending()) {
        CHECK(MovingRanges(*map).empty());
        for (const auto& r : all) CHECK(r.old_set == r.new_set);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 4. HeldRanges, DestinationRanges, Subtract.

TEST_CASE("plan: Subtract", "[rebalance][plan]") {
  using V = std::vector<TokenRange>;
  CHECK(Subtract({}, {}).empty());
  CHECK(Subtract({}, V{{1, 5}}).empty());
  CHECK(Subtract(V{{1, 5}}, {}) == V{{1, 5}});
  CHECK(Subtract(V{{1, 5}}, V{{1, 5}}).empty());
  CHECK(Subtract(V{{1, 5}}, V{{0, 9}}).empty());
  CHECK(Subtract(V{{0, UINT64_MAX}}, V{{0, UINT64_MAX}}).empty());
  CHECK(Subtract(V{{0, 100}}, V{{10, 20}}) == V{{0, 9}, {21, 100}});
  CHECK(Subtract(V{{0, 100}}, V{{0, 20}}) == V{{21, 100}});
  CHECK(Subtract(V{{0, 100}}, V{{90, 200}}) == V{{0, 89}});
  CHECK(Subtract(V{{10, 20}}, V{{0, 5}, {30, 40}}) == V{{10, 20}});
  CHECK(Subtract(V{{0, UINT64_MAX}}, V{{10, UINT64_MAX}}) == V{{0, 9}});
  CHECK(Subtract(V{{0, UINT64_MAX}}, V{{0, 9}}) == V{{10, UINT64_MAX}});
  CHECK(Subtract(V{{0, UINT64_MAX}}, V{{5, 9}}) == V{{0, 4}, {10, UINT64_MAX}});
  CHECK(Subtract(V{{UINT64_MAX - 5, UINT64_MAX}}, V{{UINT64_MAX, UINT64_MAX}}) ==
        V{{UINT64_MAX - 5, UINT64_MAX - 1}});
  CHECK(Subtract(V{{0, 100}}, V{{10, 20}, {30, 40}, {50, 60}}) ==
        V{{0, 9}, {21, 29}, {41, 49}, {61, 100}});
  CHECK(Subtract(V{{0, 10}, {20, 30}, {40, 50}}, V{{5, 25}, {45, 60}}) ==
        V{{0, 4}, {26, 30}, {40, 44}});
  CHECK(Subtract(V{{0, 10}, {20, 30}}, V{{0, 10}, {20, 30}}).empty());
  CHECK(Subtract(V{{0, 0}, {2, 2}}, V{{1, 1}}) == V{{0, 0}, {2, 2}});

  // Randomized against a point-wise model over a small universe.
  std::mt19937_64 rng(12345);
  auto random_ranges = [&rng](int universe) {
    std::vector<TokenRange> out;
    uint64_t pos = rng() % 4;
    while (pos < static_cast<uint64_t>(universe)) {
      const uint64_t last = std::min<uint64_t>(pos + rng() % 8, universe - 1);
      out.push_back({pos, last});
      pos = last + 2 + rng() % 6;
    }
    return out;
  };
  auto contains = [](const std::vector<TokenRange>& v, uint64_t t) {
    for (const auto& r : v) {
      if (r.Contains(t)) return true;
    }
    return false;
  };
  for (int iter = 0; iter < 500; ++iter) {
    const int universe = 64;
    const auto a = random_ranges(universe);
    const auto b = random_ranges(universe);
    const auto d = Subtract(a, b);
    for (size_t i = 0; i < d.size(); ++i) {
      REQUIRE(d[i].Valid());
      if (i > 0) REQUIRE(d[i - 1].last < d[i].first);
    }
    for (uint64_t t = 0; t < static_cast<uint64_t>(universe); ++t) {
      REQUIRE(contains(d, t) == (contains(a, t) && !contains(b, t)));
    }
  }
}

TEST_CASE("plan: HeldRanges and DestinationRanges match per-key placement", "[rebalance][plan]") {
  constexpr size_t kKeys = 20000;
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    INFO("mode " << ModeName(mode));
    const ClusterMap m = MustCreate(Params(mode, 2, 256, 64), 3);
    const ClusterMap joining = Must(clustermap::WithNodeJoining(m, Node(4)));
    const ClusterMap leaving = Must(clustermap::WithNodeLeaving(m, 3));
    const auto tokens = KeyTokens(m, kKeys);
    for (const ClusterMap* map : {&m, &joining, &leaving}) {
      INFO(map->DebugString());
      for (const ClusterNode& node : map->nodes()) {
        const uint32_t id = node.id;
        INFO("node " << id);
        const auto held = HeldRanges(*map, id, false);
        const auto held_pending = HeldRanges(*map, id, true);
        CheckSortedMerged(held);
        CheckSortedMerged(held_pending);
        size_t wrong = 0, wrong_pending = 0;
        for (uint64_t t : tokens) {
          if (InRanges(held, t) != Has(map->Replicas(t), id)) ++wrong;
          if (InRanges(held_pending, t) != map->Holds(id, t)) ++wrong_pending;
        }
        CHECK(wrong == 0);
        CHECK(wrong_pending == 0);
        if (node.state == NodeState::kJoining) CHECK(held.empty());
        if (!map->has_pending()) CHECK(held == held_pending);

        // DestinationRanges == union of the moving ranges where `id` is new.
        std::vector<TokenRange> expected;
        for (const MovingRange& r : MovingRanges(*map)) {
          if (!Has(r.new_set, id) || Has(r.old_set, id)) continue;
          if (!expected.empty() && expected.back().last + 1 == r.range.first) {
            expected.back().last = r.range.last;
          } else {
            expected.push_back(r.range);
          }
        }
        const auto dest = DestinationRanges(*map, id);
        CheckSortedMerged(dest);
        CHECK(dest == expected);
        // A destination's ranges are inside what it holds once pending counts, outside the
        // current ones.
        CHECK(Subtract(dest, held_pending).empty());
        CHECK(Subtract(dest, held) == dest);
        if (node.state == NodeState::kJoining) {
          CHECK(dest == held_pending);
          size_t wrong_dest = 0;
          for (uint64_t t : tokens) {
            if (InRanges(dest, t) != Has(map->PendingReplicas(t), id)) ++wrong_dest;
          }
          CHECK(wrong_dest == 0);
        }
        if (!map->has_pending()) CHECK(dest.empty());
      }
    }
  }
}
