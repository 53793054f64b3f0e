// Multi-host scenarios without a membership change in flight (design.md "Multi-host test bed"):
// forming across hosts and a join (issue 11's "Done means"), isolation, a majority/minority
// split with clients on both sides, and clock skew. The change scenarios are in
// scenarios_change_test.cc.
//
// Expected failures: a scenario the findings (../shared/findings/fault-bed-2026-12-01.md) saw
// break is tagged [!mayfail] and prints "EXPECTED FAILURE (issue 12): ..." when its checks fail:
// they are not deterministic (a run may hold), so CTest's WILL_FAIL, which fails a passing run,
// does not fit. Catch still reports each failed CHECK, so the failure stays visible in the log.
#include <catch2/catch.hpp>

#include "multihost/scenario_macros.h"

namespace shardkv::multihost {
namespace {

using namespace std::chrono_literals;

TEST_CASE("three hosts: cluster init, put and get from the root namespace, join a fourth",
          "[multihost]") {
  MULTIHOST_SCENARIO(s, "init-join", 4);
  REQUIRE(s.StartNodes(3).ok());
  const Status formed = s.Form(3);
  INFO(formed.ToString());
  REQUIRE(formed.ok());
  Command put = s.bed().Cli(0, s.bed().Addresses({1, 2, 3}), {"put", "bed-key", "bed-value"});
  INFO(put.out);
  REQUIRE(put.exit_code == 0);
  Command get = s.bed().Cli(0, s.bed().Addresses({2}), {"get", "bed-key"});
  INFO(get.out);
  REQUIRE(get.exit_code == 0);
  CHECK(get.out.find("bed-value") != std::string::npos);

  REQUIRE(s.bed().StartNode(4).ok());
  Command join = s.Cli(0, {1, 2, 3}, {"cluster", "join", s.bed().Address(4)});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  auto state = s.FinishChange(Scale(60s), 0);
  INFO(state.status().ToString());
  REQUIRE(state.ok());
  CHECK(*state == "done");
  REQUIRE(s.Settle(30s).ok());
  // The fourth node answers for the key, and the map lists four nodes.
  Command again = s.bed().Cli(0, s.bed().Addresses({4}), {"get", "bed-key"});
  INFO(again.out);
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("bed-value") != std::string::npos);
  Command status = s.bed().Cli(0, s.bed().Addresses({1}), {"cluster", "status", "--json"});
  INFO(status.out);
  CHECK(status.exit_code == 0);
  CHECK(status.out.find(s.bed().Address(4)) != std::string::npos);
  CHECK(s.Teardown().empty());
}

TEST_CASE("isolate one node of three", "[multihost]") {
  MULTIHOST_SCENARIO(s, "isolate-one", 3);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  const auto fault = Scale(6s);
  s.StartSamplers(fault + 20s);
  s.StartWorkload({.prefix = "A", .duration = fault + 5s});
  REQUIRE(s.WaitForOps(100, 20s));  // the workload runs before the fault
  REQUIRE(s.nemesis().Isolate(3).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  s.WaitAll(60s);
  REQUIRE(s.Settle(60s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

TEST_CASE("majority/minority split with clients on both sides", "[multihost]") {
  MULTIHOST_SCENARIO(s, "split-2-3", 5);
  REQUIRE(s.StartNodes(5).ok());
  REQUIRE(s.Form(5).ok());
  const auto fault = Scale(8s);
  s.StartSamplers(fault + 25s);
  // One workload inside each side (its clients reach only that side), one in the root
  // namespace, which reaches both.
  s.StartWorkload({.host = 1,
                   .prefix = "A",
                   .read_prefixes = {"B"},
                   .seed_hosts = {1, 2},
                   .duration = fault + 5s,
                   .seed = 1});
  s.StartWorkload({.host = 3,
                   .prefix = "B",
                   .read_prefixes = {"A"},
                   .seed_hosts = {3, 4, 5},
                   .duration = fault + 5s,
                   .seed = 2});
  s.StartWorkload({.host = 0,
                   .prefix = "R",
                   .read_prefixes = {"A", "B"},
                   .writers = 1,
                   .readers = 1,
                   .duration = fault + 5s,
                   .seed = 3});
  REQUIRE(s.WaitForOps(200, 20s));
  REQUIRE(s.nemesis().Partition({{1, 2}, {3, 4, 5}}).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  s.WaitAll(60s);
  REQUIRE(s.Settle(90s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

// The other nemeses: latency into node 2 (the delaying proxy, set before the traffic it slows),
// loss on node 3, then a bridge (1 sees 2 and 3, which do not see each other), then heal.
TEST_CASE("latency, loss and a bridge", "[multihost]") {
  MULTIHOST_SCENARIO(s, "latency-loss-bridge", 3);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.nemesis().Latency(2, 30ms).ok());
  REQUIRE(s.Form(3).ok());
  const auto fault = Scale(5s);
  s.StartSamplers(2 * fault + 20s);
  s.StartWorkload({.prefix = "L", .duration = 2 * fault + 3s});
  REQUIRE(s.WaitForOps(100, 20s));
  REQUIRE(s.nemesis().Loss(3, 0.05).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Bridge(1, {2}, {3}).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  s.WaitAll(60s);
  REQUIRE(s.Settle(60s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

// Node 3's wall clock `skew_ms` off (libfaketime, monotonic untouched), then three rounds of
// SIGKILL and restart of node 3, as in the findings' e4 (lost writes with a clock 1 s fast, A2):
// writers without a session (a new client per write) on few keys, so that a key is written
// again within a second, while node 3 is down, of a write node 3 stamped in its future.
void SkewScenario(const std::string& name, int skew_ms) {
  MULTIHOST_SCENARIO(s, name, 3);
  REQUIRE(s.StartNodes(3, {0, 0, skew_ms}).ok());
  // The nemesis works: node 3's log is stamped skew_ms off (polling and logging cost < 300 ms).
  const StatusOr<int64_t> observed = s.bed().ObservedSkewMs(3);
  REQUIRE(observed.ok());
  std::printf("%s: node 3's clock observed %+lld ms off\n", name.c_str(),
              static_cast<long long>(*observed));
  CHECK(std::abs(*observed - skew_ms) < 300);
  REQUIRE(s.Form(3).ok());
  const auto window = Scale(9s);
  s.StartSamplers(window + 20s);
  s.StartWorkload({.prefix = "S", .read_prefixes = {"F"}, .duration = window, .seed = 1});
  s.StartWorkload({.prefix = "F",
                   .writers = 2,
                   .readers = 0,
                   .keys = 3,
                   .duration = window,
                   .seed = 2,
                   .fresh_clients = true});
  REQUIRE(s.WaitForOps(100, 20s));
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(window / 5);  // the skewed node serves a while (a fault window)
    s.nemesis().Kill(3);
    std::this_thread::sleep_for(300ms);  // writes go to the others while node 3 is down
    REQUIRE(s.nemesis().Restart(3, skew_ms).ok());
  }
  s.WaitAll(60s);
  REQUIRE(s.Settle(60s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f,
                 "lost writes and stale reads with a clock off by more than "
                 "max_clock_offset (findings A2, A6)"));
  CHECK(s.Teardown().empty());
}

TEST_CASE("a node 1 s ahead", "[multihost][!mayfail]") { SkewScenario("skew+1s", 1000); }
TEST_CASE("a node 2 s ahead", "[multihost][!mayfail]") { SkewScenario("skew+2s", 2000); }
TEST_CASE("a node 1 s behind", "[multihost][!mayfail]") { SkewScenario("skew-1s", -1000); }
TEST_CASE("a node 2 s behind", "[multihost][!mayfail]") { SkewScenario("skew-2s", -2000); }

}  // namespace
}  // namespace shardkv::multihost
