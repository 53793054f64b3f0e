// GcHorizon (rebalance/gc_horizon.h): the per-range repair horizons behind the tombstone GC
// rule. A horizon is tied to the range's replica set and never goes down; a range with no
// complete repair under its set has none (nothing past the grace is collected there); RF=1 has
// an unbounded one; the records survive a restart; a range not repaired for a grace is reported
// blocked, with the replicas it waits for.
#include "rebalance/gc_horizon.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "plan_test_util.h"
#include "rebalance/plan.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

namespace shardkv::rebalance {
namespace {

using plan_test::MustCreate;
using plan_test::Params;

constexpr uint64_t kGraceMs = 1000;

struct Fixture {
  testing::TempDir dir;
  uint64_t now = 100000;
  std::unique_ptr<storage::Storage> storage;

  Fixture() {
    storage::StorageOptions o;
    o.gc_after_repair = true;
    auto s = storage::Storage::Open(dir.Sub("db"), o);
    REQUIRE(s.ok());
    storage = std::move(s).value();
  }
  std::unique_ptr<GcHorizon> Horizon() {
    auto h = std::make_unique<GcHorizon>(1, storage.get(), [this] { return now; });
    REQUIRE(h->Load().ok());
    return h;
  }
};

std::vector<uint32_t> Ids(std::vector<uint32_t> v) { return plan_test::Sorted(std::move(v)); }

}  // namespace

TEST_CASE("GcHorizon: recorded per range and replica set, never lowered, kept across a restart",
          "[gc]") {
  Fixture f;
  const ClusterMap map = MustCreate(Params(PlacementMode::kJump, 3, 8), 3);  // all hold all
  const std::vector<MovingRange> ranges = AllRanges(map);
  REQUIRE(ranges.size() == 8);
  const TokenRange r0 = ranges[0].range;
  const TokenRange r1 = ranges[1].range;
  auto h = f.Horizon();
  h->Refresh(&map);
  // No repair yet: no horizon anywhere.
  for (const MovingRange& r : ranges) CHECK(h->HorizonOf(r.range.first) == 0);

  h->Record(r0, {3, 1, 2}, 5000);
  CHECK(h->HorizonOf(r0.first) == 5000);
  CHECK(h->HorizonOf(r0.last) == 5000);
  CHECK(h->HorizonOf(r1.first) == 0);
  h->Record(r0, {1, 2, 3}, 4000);  // an older repair finishing late: kept at 5000
  CHECK(h->HorizonOf(r0.first) == 5000);
  h->Record(r1, {1, 2}, 6000);  // not the range's set (another map's): ignored
  CHECK(h->HorizonOf(r1.first) == 0);
  h->Record({r1.first, r1.first + 10}, {1, 2, 3}, 6000);  // part of a range: not the range
  CHECK(h->HorizonOf(r1.first) == 0);

  // A restart reads the records back.
  h.reset();
  h = f.Horizon();
  h->Refresh(&map);
  CHECK(h->HorizonOf(r0.first) == 5000);
  CHECK(h->HorizonOf(r1.first) == 0);
}

TEST_CASE("GcHorizon: a range whose replica set changed has no horizon until repaired again",
          "[gc]") {
  Fixture f;
  const ClusterMap three = MustCreate(Params(PlacementMode::kJump, 3, 8), 3);
  auto h = f.Horizon();
  h->Refresh(&three);
  for (const MovingRange& r : AllRanges(three)) h->Record(r.range, r.old_set, 5000);
  // A fourth node: each range keeps its horizon only if its set did not change.
  const ClusterMap four = MustCreate(Params(PlacementMode::kJump, 3, 8), 4);
  h->Refresh(&four);
  size_t kept = 0, reset = 0;
  for (const MovingRange& r : AllRanges(four)) {
    const uint64_t expected = Ids(r.old_set) == Ids({1, 2, 3}) ? 5000 : 0;
    if (std::find(r.old_set.begin(), r.old_set.end(), 1u) == r.old_set.end()) continue;
    INFO("range " << r.range.first << ".." << r.range.last);
    CHECK(h->HorizonOf(r.range.first) == expected);
    ++(expected != 0 ? kept : reset);
  }
  CHECK(reset > 0);  // node 1 holds ranges with node 4 now
  // Back to the three: the records of the sets that changed were forgotten.
  const std::vector<MovingRange> after = AllRanges(four);
  h->Refresh(&three);
  for (const MovingRange& r : AllRanges(three)) {
    const bool unchanged = std::any_of(after.begin(), after.end(), [&](const MovingRange& m) {
      return m.range == r.range && Ids(m.old_set) == Ids({1, 2, 3});
    });
    CHECK(h->HorizonOf(r.range.first) == (unchanged ? 5000 : 0));
  }
  CHECK(kept > 0);
}

TEST_CASE("GcHorizon: ring arcs, as repair cuts them, with 4 nodes at RF 3", "[gc]") {
  Fixture f;
  const ClusterMap ring = MustCreate(Params(PlacementMode::kRing, 3, 256, 16), 4);
  auto h = f.Horizon();
  h->Refresh(&ring);
  size_t held = 0;
  for (const MovingRange& r : AllRanges(ring)) {
    const bool here = std::find(r.old_set.begin(), r.old_set.end(), 1u) != r.old_set.end();
    INFO("arc " << r.range.first << ".." << r.range.last);
    CHECK(h->HorizonOf(r.range.last) == 0);
    h->Record(r.range, r.old_set, 7000);  // the comparing node's word, to every replica
    CHECK(h->HorizonOf(r.range.first) == (here ? 7000 : 0));
    CHECK(h->HorizonOf(r.range.last) == (here ? 7000 : 0));
    held += here ? 1 : 0;
  }
  CHECK(held > 0);
}

TEST_CASE("GcHorizon: one replica has an unbounded horizon (the grace alone decides)", "[gc]") {
  Fixture f;
  const ClusterMap one = MustCreate(Params(PlacementMode::kJump, 1, 8), 2);
  auto h = f.Horizon();
  h->Refresh(&one);
  size_t held = 0;
  for (const MovingRange& r : AllRanges(one)) {
    if (r.old_set.front() != 1) {
      CHECK(h->HorizonOf(r.range.first) == 0);  // not held here
      continue;
    }
    ++held;
    CHECK(h->HorizonOf(r.range.first) == UINT64_MAX);
  }
  CHECK(held > 0);
  CHECK(h->Blocking(f.now + 100 * kGraceMs, kGraceMs, [](uint32_t) { return false; }).ranges == 0);
}

TEST_CASE("GcHorizon: ranges not repaired for a grace are blocked, naming the replicas away",
          "[gc]") {
  Fixture f;
  const ClusterMap map = MustCreate(Params(PlacementMode::kJump, 3, 8), 3);
  auto h = f.Horizon();
  h->Refresh(&map);  // held since f.now
  const auto ranges = AllRanges(map);
  auto down3 = [](uint32_t id) { return id != 3; };
  // Within a grace of being held: nothing blocked, even with no repair yet.
  CHECK(h->Blocking(f.now + kGraceMs, kGraceMs, down3).ranges == 0);
  // Past it: every range, waiting for node 3.
  auto blocked = h->Blocking(f.now + kGraceMs + 1, kGraceMs, down3);
  CHECK(blocked.ranges == ranges.size());
  CHECK(blocked.waiting_for == std::vector<uint32_t>{3});
  // One range repaired since: the others still wait.
  h->Record(ranges[0].range, ranges[0].old_set, f.now + 500);
  blocked = h->Blocking(f.now + kGraceMs + 1, kGraceMs, down3);
  CHECK(blocked.ranges == ranges.size() - 1);
  // Every replica answering: still blocked (not repaired), but waiting for no one in particular.
  blocked = h->Blocking(f.now + kGraceMs + 1, kGraceMs, [](uint32_t) { return true; });
  CHECK(blocked.ranges == ranges.size() - 1);
  CHECK(blocked.waiting_for.empty());
}

}  // namespace shardkv::rebalance
