// The stream scheduling policy (schedule.h) as pure functions: no timing.
#include "rebalance/schedule.h"

#include <catch2/catch.hpp>

using namespace shardkv::rebalance;

TEST_CASE("schedule: --rate and --streams are per destination", "[rebalance][schedule]") {
  SECTION("a remove: one source, three destinations, all stream at once") {
    // Two tasks per destination 2, 3, 4, all from the leaving node (the source is not a slot).
    std::vector<TaskSlot> tasks;
    for (uint32_t dst : {2u, 3u, 4u}) {
      for (int k = 0; k < 3; ++k) tasks.push_back({dst, false, false, false});
    }
    const auto picked = PickTasksToStart(tasks, 2, 16);
    CHECK(picked == std::vector<size_t>{0, 1, 3, 4, 6, 7});
  }
  SECTION("busy, done and backing-off tasks, and the worker limit") {
    std::vector<TaskSlot> tasks = {
        {1, true, false, false},   // running
        {1, false, false, false},  // 1 has one free slot
        {1, false, false, false},  // ... and no second
        {2, false, true, false},   // done
        {2, false, false, true},   // backing off
        {2, false, false, false},
    };
    CHECK(PickTasksToStart(tasks, 2, 16) == std::vector<size_t>{1, 5});
    CHECK(PickTasksToStart(tasks, 2, 1) == std::vector<size_t>{1});
    CHECK(PickTasksToStart(tasks, 2, 0).empty());
    CHECK(PickTasksToStart(tasks, 0, 16) == std::vector<size_t>{5});  // streams 0 acts as 1
  }
  SECTION("worker pool size is bounded whatever the task count") {
    CHECK(StreamWorkers(45000, 1, 2) == 2);
    CHECK(StreamWorkers(45000, 3, 2) == 6);
    CHECK(StreamWorkers(1000000, 100, 64) == kMaxStreamWorkers);
    CHECK(StreamWorkers(1, 3, 2) == 1);
    CHECK(StreamWorkers(0, 0, 0) == 1);
  }
}
