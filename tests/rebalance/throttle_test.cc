// --rate is per destination node: every stream task into a node draws from that node's one
// limiter (rate_limiter.h, design.md "throttling"). A lower bound on the change's duration, so
// a slow machine can only make it pass more easily; it fails if the tasks into one destination
// each kept to the whole rate on their own (three tasks would then take about a third as long).
#include <catch2/catch.hpp>
#include <chrono>

#include "rebalance_test_util.h"
#include "shardkv/admin.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using namespace shardkv::rebalance_test;
using shardkv::testing::AdminFor;
using shardkv::testing::InProcessCluster;
using shardkv::testing::WaitChange;

TEST_CASE("throttle: the tasks into one destination share its rate", "[rebalance][throttle]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  // Small values, so that each task needs several batches (at most 2048 entries each): only a
  // task's first batch comes before the limiter has anything to say.
  Load(c, 40000, 100);
  REQUIRE(c.AddStandaloneNode().ok());
  auto admin = AdminFor(c);
  const uint64_t rate = uint64_t{1} << 20;
  const AdminReply begun = admin->Begin(AddOf(c, 4), ChangeThrottle{rate, 4});
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  // Node 4 is the only destination, fed by one task per leaving-replica pairing, all at once.
  REQUIRE(begun.report.record.planned_ranges >= 2);
  auto done = WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(120));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  const double moved = static_cast<double>(done->record.moved_bytes);
  INFO("moved " << moved << " bytes in " << done->elapsed_s << " s, " << done->record.planned_ranges
                << " tasks");
  REQUIRE(moved > 2.0 * static_cast<double>(rate));
  // The limiter charges a batch after it arrived, so each task's first batch (at most 2048
  // entries of under 150 bytes here) is free; the rest takes at least its bytes / rate. Measured
  // on this machine: 3.2 s shared; 1.4 s with a limiter per task, below this bound (1.8 s).
  const double free_bytes = static_cast<double>(done->record.planned_ranges) * 2048 * 150;
  CHECK(done->elapsed_s >= 0.9 * (moved - free_bytes) / static_cast<double>(rate));
}
