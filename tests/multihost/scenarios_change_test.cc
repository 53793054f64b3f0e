// Multi-host scenarios with a membership change in flight (design.md "Multi-host test bed"):
// join while a node is partitioned, partition of the driver and of the destination
// mid-stream, a 2|2 split with a remove-node started on each side, SIGSTOP of the driver
// mid-change, a 3|2 split with the driver on the minority side, and a rolling restart of every
// node during a join.
#include <algorithm>
#include <catch2/catch.hpp>
#include <optional>

#include "multihost/scenario_macros.h"

namespace shardkv::multihost {
namespace {

using namespace std::chrono_literals;

// 4 hosts, nodes 1-3 formed with data to stream (20 MB), node 4 started; a join of node 4 begun
// at 1 MB/s so that its streams (about a fifth of the data) last several seconds. Workload and
// samplers run. Returns the driver, checked to be streaming still.
uint32_t StartJoinMidStream(Scenario& s, std::chrono::milliseconds workload) {
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  REQUIRE(s.Load(2500, 8000).ok());
  REQUIRE(s.bed().StartNode(4).ok());
  s.StartSamplers(workload + 60s);
  s.StartWorkload({.prefix = "J", .seed_hosts = {1, 2, 3}, .duration = workload});
  REQUIRE(s.WaitForOps(100, 20s));
  Command join = s.Cli(0, {1, 2, 3}, {"cluster", "join", s.bed().Address(4), "--rate", "1"});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  std::string state;
  const uint32_t driver = s.Driver(&state);
  std::printf("driver: node %u, change %s\n", driver, state.c_str());
  REQUIRE(driver != 0);
  REQUIRE(state == "streaming");  // else the fault would not be mid-stream
  return driver;
}

void FinishAndCheck(Scenario& s, const std::string& expected_failure) {
  s.WaitAll(90s);
  auto state = s.FinishChange(90s);
  std::printf("change ended: %s\n",
              state.ok() ? state->c_str() : state.status().ToString().c_str());
  const Status settled = s.Settle(60s);
  if (!settled.ok()) std::printf("not settled: %s\n", settled.ToString().c_str());
  const Figures f = s.Check();
  const bool held = s.Report(f, expected_failure);
  CHECK(state.ok());
  CHECK(settled.ok());
  CHECK(held);
  CHECK(s.Teardown().empty());
}

// Held a put in KvService::Handle for a newer map past its client's deadline until 2026-12-02;
// it then undid an acknowledged delete of the same key in about one run in ten (design.md "Data
// path of a put").
TEST_CASE("join while a node is partitioned", "[multihost]") {
  MULTIHOST_SCENARIO(s, "join-partitioned", 4);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  REQUIRE(s.bed().StartNode(4).ok());
  const auto fault = Scale(10s);
  s.StartSamplers(fault + 40s);
  s.StartWorkload({.prefix = "P", .seed_hosts = {1, 2}, .duration = fault + 5s});
  REQUIRE(s.WaitForOps(100, 20s));
  REQUIRE(s.nemesis().Isolate(3).ok());
  Command join = s.Cli(0, {1, 2}, {"cluster", "join", s.bed().Address(4)});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  FinishAndCheck(s, "");
}

TEST_CASE("partition of the driver mid-stream", "[multihost]") {
  MULTIHOST_SCENARIO(s, "driver-partitioned", 4);
  // Longer than the 30 s after which the isolated driver's failed streams make it commit a
  // "failed" epoch by itself: a shorter window holds and shows nothing (seen: 10 s held).
  const auto fault = Scale(35s);
  const uint32_t driver = StartJoinMidStream(s, fault + 8s);
  REQUIRE(s.nemesis().Isolate(static_cast<int>(driver)).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  FinishAndCheck(s, "");
}

TEST_CASE("partition of the destination mid-stream", "[multihost]") {
  MULTIHOST_SCENARIO(s, "destination-partitioned", 4);
  // As for the driver: the isolated destination takes the change over and commits alone only
  // after its streams failed for 30 s.
  const auto fault = Scale(35s);
  StartJoinMidStream(s, fault + 8s);
  REQUIRE(s.nemesis().Isolate(4).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  FinishAndCheck(s, "");
}

// Found two maps under one epoch before the map was decided by consensus (findings A3, d2): each
// side committed its own removal. Now neither side has a majority of the four voters.
TEST_CASE("2|2 split with a remove-node started on each side", "[multihost]") {
  MULTIHOST_SCENARIO(s, "split-2-2-remove", 4);
  REQUIRE(s.StartNodes(4).ok());
  REQUIRE(s.Form(4).ok());
  const auto fault = Scale(10s);
  s.StartSamplers(fault + 60s);
  s.StartWorkload({.host = 1,
                   .prefix = "A",
                   .read_prefixes = {"B"},
                   .seed_hosts = {1, 2},
                   .duration = fault + 4s,
                   .seed = 1});
  s.StartWorkload({.host = 3,
                   .prefix = "B",
                   .read_prefixes = {"A"},
                   .seed_hosts = {3, 4},
                   .duration = fault + 4s,
                   .seed = 2});
  REQUIRE(s.WaitForOps(200, 20s));
  REQUIRE(s.nemesis().Partition({{1, 2}, {3, 4}}).ok());
  // The old leader steps down after an election timeout without a majority (1 s); a command it
  // took before that would be appended to its log, its outcome unknown until the heal.
  std::this_thread::sleep_for(3s);
  // Each side removes a node of the other side: neither can decide.
  Command a = s.Cli(1, {1, 2}, {"cluster", "remove-node", "4"});
  Command b = s.Cli(3, {3, 4}, {"cluster", "remove-node", "1"});
  std::printf("side {1,2}: exit %d: %s\nside {3,4}: exit %d: %s\n", a.exit_code, a.out.c_str(),
              b.exit_code, b.out.c_str());
  CHECK(a.exit_code == 3);
  // The CLI's own reachability check or the leader's refusal: either names the 2 of 4.
  CHECK(a.out.find("no majority: 2 of 4 ") != std::string::npos);
  CHECK(b.exit_code == 3);
  CHECK(b.out.find("no majority: 2 of 4 ") != std::string::npos);
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  const Status settled = s.Settle(60s);
  INFO(settled.ToString());
  CHECK(settled.ok());
  // Nobody was removed.
  Command status = s.bed().Cli(0, s.bed().Addresses({1, 2, 3, 4}), {"cluster", "status", "--json"});
  INFO(status.out);
  CHECK(status.exit_code == 0);
  for (int id = 1; id <= 4; ++id) {
    CHECK(status.out.find("{\"id\":" + std::to_string(id) + ",") != std::string::npos);
  }
  FinishAndCheck(s, "");
}

// Issue 12, scenario 2: with the driver on the minority side of a 3|2 split mid-stream, the
// majority elects a new leader that takes the change over and finishes it; the minority (the old
// driver and one more voter) neither commits nor serves stale reads meanwhile.
void MinorityDriverScenario(const std::string& name, const std::string& mode) {
  MULTIHOST_SCENARIO(s, name, 6);
  REQUIRE(s.StartNodes(5).ok());
  REQUIRE(s.Form(5, 3, mode).ok());
  REQUIRE(s.Load(2500, 8000).ok());
  REQUIRE(s.bed().StartNode(6).ok());
  const auto fault = Scale(15s);
  s.StartSamplers(fault + 90s);
  s.StartWorkload({.prefix = "M", .seed_hosts = {1, 2, 3, 4, 5}, .duration = fault + 10s});
  REQUIRE(s.WaitForOps(100, 20s));
  Command join = s.Cli(0, {1, 2, 3, 4, 5}, {"cluster", "join", s.bed().Address(6), "--rate", "1"});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  std::string state;
  const uint32_t driver = s.Driver(&state);
  std::printf("driver: node %u, change %s\n", driver, state.c_str());
  REQUIRE(driver != 0);
  REQUIRE(driver != 6);
  REQUIRE(state == "streaming");
  const int other = driver == 1 ? 2 : 1;
  std::vector<int> majority;
  for (int h = 1; h <= 6; ++h) {
    if (h != static_cast<int>(driver) && h != other) majority.push_back(h);
  }
  REQUIRE(s.nemesis().Partition({{static_cast<int>(driver), other}, majority}).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  // (Whoever answers from the root namespace says who it thinks drives: for the record only.)
  const uint32_t during = s.Driver(&state);
  std::printf("during the split: driver node %u, change %s\n", during, state.c_str());
  REQUIRE(s.nemesis().Heal().ok());
  FinishAndCheck(s, "");
}

TEST_CASE("3|2 split with the driver on the minority side mid-stream (ring)", "[multihost]") {
  MinorityDriverScenario("split-3-2-driver-ring", "ring");
}

TEST_CASE("3|2 split with the driver on the minority side mid-stream (jump)", "[multihost]") {
  MinorityDriverScenario("split-3-2-driver-jump", "jump");
}

TEST_CASE("SIGSTOP of the driver mid-change", "[multihost]") {
  MULTIHOST_SCENARIO(s, "driver-sigstop", 4);
  const auto pause = Scale(8s);
  const uint32_t driver = StartJoinMidStream(s, pause + 8s);
  s.nemesis().Pause(static_cast<int>(driver));
  std::this_thread::sleep_for(pause);  // the fault's window
  s.nemesis().Resume(static_cast<int>(driver));
  FinishAndCheck(s, "");
}

// Issue 12 section 4: a rolling restart of every node during a scale-out. A join of node 4
// streams (slowed so that it outlasts the restarts) while each member in turn gets SIGTERM, is
// restarted with its data and serves again before the next one goes: always the current driver
// (the consensus leader) among those not yet restarted, so that most restarts hit the driver and
// the change is taken over; then node 4, the destination. A workload runs throughout.
// A graceful stop hands the change on (NodeOptions::hand_off_at_stop), so no restart counts as
// a driver death and the change never fails; should one fail anyway, it is resumed before the
// next restart, as an operator would, and the test fails on the count. Promised: the change ends
// done without a resume and without a counted takeover, the cluster settles, nothing lost, stale
// or resurrected, no divergent epoch.
TEST_CASE("rolling restart of every node during a join", "[multihost]") {
  MULTIHOST_SCENARIO(s, "rolling-restart-join", 4);
  const auto between = Scale(2s);  // the whole cluster serves between two restarts
  const auto workload = Scale(30s);
  StartJoinMidStream(s, workload);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Admin> admin = s.MakeAdmin();
  REQUIRE(admin != nullptr);
  // Slower than the join's 1 MB/s, so that its streams (about 14 MB planned) still run when the
  // restarts (about 10 s) end.
  const AdminReply slowed = admin->SetThrottle(uint64_t{256} << 10, std::nullopt);
  INFO(slowed.status.ToString());
  REQUIRE(slowed.status.ok());
  auto progress = [&](const std::string& when) {
    const AdminReply r = admin->ChangeStatus();
    if (!r.status.ok() || !r.report.has_change) {
      std::printf("%s: no change status: %s\n", when.c_str(), r.status.ToString().c_str());
      return;
    }
    const ChangeRecord& c = r.report.record;
    std::printf(
        "%s: change %s, driver node %u, %llu of %llu planned bytes, rate %llu B/s, takeovers "
        "%u\n",
        when.c_str(), std::string(ChangeStateName(c.state)).c_str(), r.report.driver,
        static_cast<unsigned long long>(r.report.bytes_done),
        static_cast<unsigned long long>(c.planned_bytes),
        static_cast<unsigned long long>(c.rate_bytes_per_s), c.takeovers);
  };
  std::vector<int> left = {1, 2, 3};
  int driver_restarts = 0, resumes = 0;
  for (;;) {
    // A second takeover fails the change (ChangeRecord::takeovers); the operator resumes it, so
    // that every restart meets a streaming change.
    std::string change;
    s.Driver(&change);
    if (change == "failed") {
      const AdminReply resumed = admin->Resume();
      std::printf("the change failed; resume: %s\n", resumed.status.ToString().c_str());
      const auto deadline = std::chrono::steady_clock::now() + 20s;
      while (change == "failed" && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(200ms);  // polling interval, bounded by the deadline
        s.Driver(&change);
      }
      ++resumes;
    }
    int next = 4;  // the destination last
    if (!left.empty()) {
      const uint32_t driver = s.Driver();
      auto it = std::find(left.begin(), left.end(), static_cast<int>(driver));
      if (it == left.end()) it = left.begin();
      next = *it;
      left.erase(it);
      if (static_cast<uint32_t>(next) == driver) ++driver_restarts;
    }
    progress("before node " + std::to_string(next) + "'s restart");
    const int code = s.nemesis().Stop(next);
    CHECK(code == 0);  // a graceful stop, within the node's own 5 s bound
    REQUIRE(s.nemesis().Restart(next).ok());
    const Status serving = s.WaitServing(next, 30s);
    INFO(serving.ToString());
    REQUIRE(serving.ok());
    std::this_thread::sleep_for(between);  // the fault's window: the cluster whole again
    if (next == 4) break;
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "rolling restart: 4 nodes in %.1f s, %d of them the driver at the time, %d resumes between\n",
      took, driver_restarts, resumes);
  progress("after the restarts");
  CHECK(resumes == 0);  // no graceful restart may count as a driver death
  // Unthrottled again, so that the rest streams quickly. A change that failed meanwhile may refuse
  // this; FinishChange resumes it at the slow rate then, which its 120 s allow for (14 MB at
  // 256 KB/s: 55 s).
  const AdminReply fast = admin->SetThrottle(0, std::nullopt);
  std::printf("unthrottle: %s\n", fast.status.ToString().c_str());
  // Finished (and resumed) while the workload still runs, so that it sees the rest too.
  auto state = s.FinishChange(120s);
  std::printf("change ended: %s\n",
              state.ok() ? state->c_str() : state.status().ToString().c_str());
  progress("at the end");
  s.WaitAll(90s);
  const Status settled = s.Settle(60s);
  if (!settled.ok()) std::printf("not settled: %s\n", settled.ToString().c_str());
  const Figures f = s.Check();
  const bool held = s.Report(f, "");
  CHECK((state.ok() && *state == "done"));
  CHECK(settled.ok());
  CHECK(held);
  CHECK(s.Teardown().empty());
}

}  // namespace
}  // namespace shardkv::multihost
