// Rebalance plan tests, part 2: assigning the moving ranges to streams (AssignPieces,
// AssignTasks). Split from plan_test.cc (which keeps the pending placement, the moving ranges and
// the per-node ranges); the shared helpers are in plan_test_util.h.
#include <catch2/catch.hpp>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "clustermap/cluster_map_builder.h"
#include "plan_test_util.h"
#include "rebalance/plan.h"
#include "shardkv/cluster_map.h"

using namespace shardkv;
using namespace shardkv::rebalance;
using namespace shardkv::rebalance::plan_test;

// ---------------------------------------------------------------------------------------------
// AssignPieces and AssignTasks.

namespace {

void CheckTasks(const std::vector<MovingRange>& moving, const std::vector<StreamPiece>& tasks) {
  size_t next = 0;
  for (const MovingRange& r : moving) {
    const auto joining = Minus(r.new_set, r.old_set);
    const auto leaving = Minus(r.old_set, r.new_set);
    std::vector<uint32_t> dests;
    std::set<uint32_t> preferred;
    for (size_t k = 0; k < joining.size(); ++k, ++next) {
      REQUIRE(next < tasks.size());
      const StreamPiece& t = tasks[next];
      CHECK(&moving[t.moving_index] == &r);
      CHECK(t.range == r.range);
      dests.push_back(t.destination);
      REQUIRE_FALSE(t.sources.empty());
      CHECK(Sorted(t.sources) == Sorted(r.old_set));  // all of O, each once
      if (!leaving.empty() && k < leaving.size()) CHECK(Has(leaving, t.sources[0]));
      preferred.insert(t.sources[0]);
    }
    CHECK(Sorted(dests) == joining);
    if (joining.size() <= r.old_set.size()) CHECK(preferred.size() == joining.size());
  }
  CHECK(next == tasks.size());
}

}  // namespace

TEST_CASE("plan: AssignPieces pairs destinations with distinct sources", "[rebalance][plan]") {
  SECTION("hand-built ranges") {
    std::vector<MovingRange> moving = {
        {{0, 99}, {1, 2, 3}, {4, 5, 3}},        // two replace two
        {{100, 199}, {1, 2}, {1, 2, 3, 4}},     // RF grows: staying replicas as sources
        {{200, 299}, {3, 1, 2}, {2, 4, 5, 6}},  // 2 leave, 3 join
        {{300, 399}, {1, 2, 3}, {3, 2, 4}},     // one replaces one
        {{400, UINT64_MAX}, {2, 1}, {1, 2, 3}},
    };
    const auto tasks = AssignPieces(moving);
    REQUIRE(tasks.size() == 2 + 2 + 3 + 1 + 1);
    CheckTasks(moving, tasks);
    // Sorted pairing: 4 <- 1, 5 <- 2.
    CHECK(tasks[0].destination == 4);
    CHECK(tasks[0].sources == std::vector<uint32_t>{1, 2, 3});
    CHECK(tasks[1].destination == 5);
    CHECK(tasks[1].sources == std::vector<uint32_t>{2, 1, 3});
    CHECK(tasks[7].destination == 4);
    CHECK(tasks[7].sources[0] == 1);
    CHECK(AssignPieces({}).empty());
  }
  SECTION("real changes") {
    for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
      for (uint32_t rf : {1u, 2u, 3u}) {
        INFO("mode " << ModeName(mode) << " rf " << rf);
        const ClusterMap m = MustCreate(Params(mode, rf, 256, 64), 3);
        for (const ClusterMap& map : {Must(clustermap::WithNodeJoining(m, Node(4))),
                                      Must(clustermap::WithNodeLeaving(m, 2))}) {
          const auto moving = MovingRanges(map);
          const auto tasks = AssignPieces(moving);
          CheckTasks(moving, tasks);
          size_t expected = 0;
          for (const auto& r : moving) expected += Minus(r.new_set, r.old_set).size();
          CHECK(tasks.size() == expected);
        }
      }
    }
  }
}

TEST_CASE("plan: AssignTasks groups pieces by pair, the task count follows pairs, not vnodes",
          "[rebalance][plan]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    size_t tasks_at_small = 0;
    for (uint32_t size : {64u, 4000u}) {
      INFO("mode " << ModeName(mode) << " size " << size);
      // Four nodes: removing one of three at RF 3 would stream nothing (RF drops to 2).
      const ClusterMap m = MustCreate(Params(mode, 3, size, size), 4);
      for (const ClusterMap& map : {Must(clustermap::WithNodeJoining(m, Node(5))),
                                    Must(clustermap::WithNodeLeaving(m, 2))}) {
        const auto moving = MovingRanges(map);
        const auto pieces = AssignPieces(moving);
        const auto tasks = AssignTasks(moving);
        // Every piece is in exactly one task, with its destination and sources.
        std::set<std::pair<uint32_t, std::vector<uint32_t>>> groups;
        std::set<std::pair<uint32_t, uint32_t>> pairs;
        for (const StreamPiece& p : pieces) {
          groups.insert({p.destination, p.sources});
          pairs.insert({p.sources[0], p.destination});
        }
        size_t covered = 0;
        for (size_t i = 0; i < tasks.size(); ++i) {
          const StreamTask& t = tasks[i];
          CHECK(t.id == i);
          REQUIRE_FALSE(t.ranges.empty());
          CHECK(t.ranges.size() <= kMaxRangesPerTask);
          CHECK(groups.count({t.destination, t.sources}) == 1);
          for (size_t k = 1; k < t.ranges.size(); ++k) {
            CHECK(t.ranges[k - 1].last + 1 < t.ranges[k].first);  // sorted, merged
          }
          for (size_t m_index : t.moving_indexes) {
            const MovingRange& r = moving[m_index];
            CHECK(Has(r.new_set, t.destination));
            CHECK_FALSE(Has(r.old_set, t.destination));
            CHECK(InRanges(t.ranges, r.range.first));
            CHECK(InRanges(t.ranges, r.range.last));
          }
          covered += t.moving_indexes.size();
        }
        CHECK(covered == pieces.size());
        // Bounded by the groups (a few per pair), whatever the size: with 4000 vnodes there
        // are thousands of pieces.
        CHECK(tasks.size() == groups.size());
        CHECK(tasks.size() <= pairs.size() * 6);
        if (size == 64) tasks_at_small = std::max(tasks_at_small, tasks.size());
        if (size == 4000) {
          CHECK(pieces.size() > 1000);
          CHECK(tasks.size() <= std::max<size_t>(tasks_at_small, 12));
        }
      }
    }
  }
  SECTION("a pair with more than kMaxRangesPerTask ranges splits into several tasks") {
    std::vector<MovingRange> moving;
    for (uint64_t i = 0; i < kMaxRangesPerTask + 10; ++i) {
      moving.push_back({{i * 10, i * 10 + 4}, {1, 2, 3}, {4, 2, 3}});
    }
    const auto tasks = AssignTasks(moving);
    REQUIRE(tasks.size() == 2);
    CHECK(tasks[0].ranges.size() == kMaxRangesPerTask);
    CHECK(tasks[1].ranges.size() == 10);
    CHECK(tasks[1].sources == std::vector<uint32_t>{1, 2, 3});
  }
}
