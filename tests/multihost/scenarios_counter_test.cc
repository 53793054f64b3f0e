// The multi-host bed's counter scenario (design.md "Counters", "Hashes" and "Sets", issue 31's
// fault test): 8 clients increment and decrement the same 4 counters, set fields of their own in
// 2 hashes, and add (and remove some of) members of their own in 2 sets, through every node while
// the bed isolates a node, kills another with SIGKILL and restarts it, and joins a fourth node.
// The final value of each counter, read at consistency all, must equal its acknowledged changes
// plus some subset of the failed ones: never below, never above; every acknowledged field must be
// in its hash; every acknowledged SADD no acknowledged SREM saw must be in its set, and no member
// an acknowledged SREM saw.
#include <catch2/catch.hpp>
#include <thread>

#include "multihost/scenario_macros.h"

namespace shardkv::multihost {
namespace {

using namespace std::chrono_literals;

TEST_CASE("counters through every node across a partition, a kill -9 and a join", "[multihost]") {
  MULTIHOST_SCENARIO(s, "counters", 4);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  REQUIRE(s.bed().StartNode(4).ok());
  const auto fault = Scale(3s);
  s.StartSamplers(3 * fault + 40s, {1, 2, 3});
  s.StartCounters(8, 4, 3 * fault + 4s);
  // The history checker's workload beside them: plain keys keep their promises too.
  s.StartWorkload({.prefix = "C", .writers = 1, .readers = 1, .duration = 3 * fault + 4s});
  REQUIRE(s.WaitForOps(50, 20s));  // the workloads run before the first fault
  REQUIRE(s.nemesis().Isolate(1).ok());
  std::this_thread::sleep_for(fault);  // the partition's window
  REQUIRE(s.nemesis().Heal().ok());
  s.nemesis().Kill(2);                 // SIGKILL: its unsynced counter totals may be lost
  std::this_thread::sleep_for(fault);  // increments go to the others while node 2 is down
  REQUIRE(s.nemesis().Restart(2).ok());
  REQUIRE(s.WaitServing(2, 30s).ok());
  Command join = s.Cli(0, {1, 2, 3}, {"cluster", "join", s.bed().Address(4)});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  s.WaitAll(60s);
  auto state = s.FinishChange(90s);
  std::printf("counters: change ended: %s\n",
              state.ok() ? state->c_str() : state.status().ToString().c_str());
  REQUIRE(s.Settle(60s).ok());
  const std::vector<std::string> violations = s.CheckCounters();
  for (const std::string& v : violations) std::printf("counters: VIOLATION %s\n", v.c_str());
  Figures f = s.Check();
  f.violations.insert(f.violations.end(), violations.begin(), violations.end());
  CHECK(violations.empty());
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

}  // namespace
}  // namespace shardkv::multihost
