// "Plan once": a change counts the cluster's keys once (at plan, or at begin without a plan); the
// begin that follows its plan reuses the counts, and the streams start from the per-task counts
// the record carries instead of counting again (change_planner.h). Counted with the nodes' own
// op counters, so the test sees every count request any node received.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>

#include "rebalance_test_util.h"
#include "shardkv/admin.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using namespace shardkv::rebalance_test;
using shardkv::testing::AdminFor;
using shardkv::testing::InProcessCluster;
using shardkv::testing::WaitChange;

namespace {

// A counter summed over nodes 1..n (probed: a standalone or removed node answers too).
int64_t Sum(Admin& admin, const InProcessCluster& c, uint32_t n, std::string_view name) {
  int64_t sum = 0;
  for (uint32_t id = 1; id <= n; ++id) {
    const NodeProbe p = admin.Probe(c.Address(id));
    REQUIRE(p.stats.has_value());
    if (auto it = p.stats->counters.find(std::string(name)); it != p.stats->counters.end()) {
      sum += it->second;
    }
  }
  return sum;
}

const std::string kCountOps = std::string(stats::kOpsPrefix) + "count_ranges";

}  // namespace

TEST_CASE("plan once: plan + begin + streams count the keys once", "[rebalance][plan]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  const int kKeys = 3000;
  Load(c, kKeys);
  auto added = c.AddStandaloneNode();
  REQUIRE(added.ok());
  auto admin = AdminFor(c);
  const ChangeRequest add = AddOf(c, 4);

  const int64_t at_start = Sum(*admin, c, 4, kCountOps);
  const AdminReply plan = admin->Plan(add);
  INFO(plan.status.ToString());
  REQUIRE(plan.status.ok());
  const int64_t after_plan = Sum(*admin, c, 4, kCountOps);
  // The old replicas' counts.
  CHECK(after_plan - at_start >= 2);
  REQUIRE_FALSE(plan.report.record.task_plans.empty());
  uint64_t planned = 0;
  for (const TaskPlan& t : plan.report.record.task_plans) planned += t.copies;
  CHECK(planned == plan.report.record.planned_copies);
  CHECK(planned > 0);

  const AdminReply begun = admin->Begin(add, RateMb(0), plan.address);
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  auto done = WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  // Nothing counted again: not begin (it reused the plan), not the streams (they had the
  // record's task plans), not the joining node (unformed: it holds no map, and so no data).
  CHECK(Sum(*admin, c, 4, kCountOps) - after_plan == 0);
  CHECK(Sum(*admin, c, 4, stats::rebalance_plans_counted) == 1);
  // The record persisted the plan, and the change moved what it planned.
  CHECK(done->record.task_plans.size() == plan.report.record.task_plans.size());
  CHECK(done->record.planned_copies == plan.report.record.planned_copies);
  CHECK(done->record.moved_copies >= done->record.planned_copies);
}

TEST_CASE("plan once: a begin without a plan counts once", "[rebalance][plan]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  Load(c, 1000);
  auto admin = AdminFor(c);
  const int64_t at_start = Sum(*admin, c, 3, kCountOps);
  const AdminReply begun = admin->Begin(RemoveOf(3), RateMb(0));
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  auto done = WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  CHECK(Sum(*admin, c, 2, stats::rebalance_plans_counted) == 1);
  const int64_t counted = Sum(*admin, c, 3, kCountOps) - at_start;
  CHECK(counted >= 1);
  // One count round: at most one request per old replica (the ranges fit in one request each).
  CHECK(counted <= 3);
}
