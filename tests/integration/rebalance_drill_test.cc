// Rebalance fault drills on real shardkv-node processes driven through the shardkv CLI
// (design.md "Rebalancing: the transition protocol" and "Testing", the fault tests): a node
// added and removed under a running history checker, kill -9 of the destination, of a source and
// of the driver mid-stream, a replica SIGSTOPped across a whole change, cancel, and removal of a
// dead node.
//
// Every wait is a poll with a deadline, and every CLI run has one too (a hung `rebalance watch`
// fails the drill instead of hanging ctest). Key counts come from SHARDKV_TEST_KEYS. A drill that
// fails keeps a copy of its cluster directory (node logs and data) and prints where, with the
// tail of every node.log. The harness (drill_harness.h) does all of that; this file holds the
// drills.
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "integration/drill_harness.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "testing/history_checker.h"

namespace shardkv::drill {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The drills that act mid-stream need a stream task caught half done, with seconds of it left:
// the destination checkpoints after every batch (2048 entries or 2 MB) and reports progress
// after every slice (500 ms), and the change runs one task at a time with --streams 1. Jump mode
// with 4 shards makes 3 tasks on 3 -> 4 nodes, one per old node, each a quarter of the keys;
// about 24 MB per replica makes each task about 3 batches, and 1 MB/s about 2 s per batch. The
// value size grows as SHARDKV_TEST_KEYS shrinks to keep that shape; the drills lift the throttle
// once the fault is in.
Load SlowLoad() {
  Load l;
  l.count = std::max(1000, TestKeys(20000));
  l.value_size = static_cast<size_t>(std::clamp(24'000'000 / l.count, 1000, 24'000));
  l.mode = "jump";
  l.up_flags = {"--shards", "4"};
  return l;
}

// A stream task is half done right now, with at least half of it left: a pair with a single
// range has reported some but at most half of its copies. The destination checkpointed them
// before it reported them.
bool TaskHalfDone(const RebalanceStatus& s) {
  for (const StreamEntry& e : ParseStreams(s.proc.out)) {
    if (e.ranges_total == 1 && e.ranges_done == 0 && e.copies_done > 0 &&
        e.copies_done * 2 <= e.copies_planned) {
      return true;
    }
  }
  return false;
}

// `cluster add-node` throttled to 1 MB/s and one stream, then polls until a stream task is half
// done (SlowLoad() explains why that happens). Returns that status.
RebalanceStatus AddNodeSlowly(Drill& d) {
  auto add = d.Cli({"cluster", "add-node", "--yes", "--rate", "1", "--streams", "1"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  bool half_done = false;
  RebalanceStatus st = d.PollStatus(
      [](const RebalanceStatus& s) { return s.state == "streaming" && TaskHalfDone(s); },
      seconds(60), &half_done);
  INFO("last status: " << st.proc.Text());
  REQUIRE(half_done);
  REQUIRE(st.moved_copies > 0);
  REQUIRE(st.moved_copies < st.planned_copies);  // really mid-stream
  return st;
}

// Lifts the throttle once the fault is in, so the drill does not wait out 1 MB/s. A task already
// running keeps its rate to its end.
void Unthrottle(Drill& d) {
  auto t = d.Cli({"rebalance", "throttle", "--rate", "256", "--streams", "2"});
  INFO(t.Text());
  CHECK(t.exit_code == 0);
}

// Watches the change to its end; if it went to failed meanwhile, resumes it once and watches
// again (design: a failed change continues from its checkpoints). Returns the last watch.
Proc WatchResumingOnce(Drill& d, bool* resumed) {
  *resumed = false;
  Proc w = Watch(d);
  if (w.exit_code == 0) return w;
  RebalanceStatus st = d.Status();
  if (st.state != "failed") return w;
  WARN("change failed (" << st.error << "); resuming\n" << w.Text());
  auto resume = d.Cli({"rebalance", "resume"});
  INFO(resume.Text());
  CHECK(resume.exit_code == 0);
  *resumed = true;
  return Watch(d);
}

// The moved fraction against the ideal: within `factor` either way.
void CheckFraction(const RebalanceStatus& st, double factor, const std::string& what) {
  const double fraction = st.moved_copies / st.total_copies;
  WARN(what << ": moved " << st.moved_copies << " of " << st.total_copies
            << " copies = " << fraction << " (ideal " << st.ideal_fraction << ", ratio "
            << fraction / st.ideal_fraction << "), planned " << st.planned_copies
            << ", remapped keys " << st.remapped_keys);
  REQUIRE(st.total_copies > 0);
  REQUIRE(st.ideal_fraction > 0);
  CHECK(fraction <= st.ideal_fraction * factor);
  CHECK(fraction >= st.ideal_fraction / factor);
  // Only the history checker's 100 keys change while the change runs.
  CHECK(std::abs(st.moved_copies - st.planned_copies) <= 100);
}

// ---- Drill 1: add then remove a node under the history checker -------------------------------

// One membership change of AddThenRemove (`command`, of `kind`, on node 4) under the history
// checker: it runs to done without client errors and moves about the ideal fraction.
void ChangeNode4(Drill& d, const std::vector<std::string>& command, const std::string& kind,
                 const std::string& mode, double factor) {
  auto begin = d.Cli(command);
  INFO(begin.Text());
  REQUIRE(begin.exit_code == 0);
  auto watch = Watch(d);
  INFO(watch.Text());
  REQUIRE(watch.exit_code == 0);
  RebalanceStatus st = d.Status();
  INFO("after " << kind << ": " << st.proc.Text());
  REQUIRE(st.ok());
  CHECK(st.state == "done");
  CHECK(st.kind == kind);
  CHECK(st.node_id == 4);
  CHECK(st.client_errors == 0);
  CheckFraction(st, factor, mode + " " + kind + " node 4");
}

void AddThenRemove(const std::string& mode, double factor) {
  Drill d;
  Load load;
  load.count = TestKeys(20000);
  load.mode = mode;
  Up(d, 3, load);
  const ClientOptions co = ClientFor(d, {1, 2, 3});
  testing::HistoryChecker checker(co, LongHistory());
  REQUIRE(checker.Start().ok());
  REQUIRE(checker.WaitUntil([](const auto& s) { return s.acked >= 100; }, seconds(30)));

  ChangeNode4(d, {"cluster", "add-node", "--yes"}, "add", mode, factor);
  REQUIRE(HundredMoreAcked(checker));
  ChangeNode4(d, {"cluster", "remove-node", "4", "--yes"}, "remove", mode, factor);
  CHECK(HundredMoreAcked(checker));
  checker.Stop();
  const auto stats = checker.stats();
  INFO("history: " << HistoryText(stats) << "; " << kSeedsNote);
  Status final_check = checker.FinalCheck(co);
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  CHECK(checker.Violations().empty());
  CHECK(stats.failed == 0);
  CHECK(stats.read_errors == 0);
  Verify(d, load);
}

// Kills `victim` mid-stream (the change throttled), then lets the change finish without it.
// Returns the status once done.
// `allow_resume`: a change that went to failed meanwhile may be resumed once.
RebalanceStatus KillMidStreamAndFinish(Drill& d, int victim, bool restart_before_watch,
                                       bool allow_resume) {
  d.CliOk({"cluster", "stop-node", std::to_string(victim), "--kill"});
  if (restart_before_watch) {
    d.CliOk({"cluster", "start-node", std::to_string(victim)});
  }
  Unthrottle(d);
  bool resumed = false;
  Proc w = allow_resume ? WatchResumingOnce(d, &resumed) : Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  REQUIRE(st.ok());
  CHECK(st.state == "done");
  return st;
}

}  // namespace

TEST_CASE("drill: add then remove a node under the history checker (ring)", "[rebalance][drill]") {
  AddThenRemove("ring", 1.3);
}

TEST_CASE("drill: add then remove a node under the history checker (jump)", "[rebalance][drill]") {
  AddThenRemove("jump", 1.1);
}

TEST_CASE("drill: kill -9 of the destination mid-stream resumes from checkpoints",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  WARN("killing destination node 4 at " << mid.moved_copies << " of " << mid.planned_copies
                                        << " copies");
  const RebalanceStatus st = KillMidStreamAndFinish(d, 4, /*restart_before_watch=*/true,
                                                    /*allow_resume=*/true);
  WARN("destination drill: planned " << st.planned_copies << " moved " << st.moved_copies
                                     << " resumed tasks " << st.resumed_tasks);
  CHECK(st.resumed_tasks > 0);
  CHECK(st.moved_copies >= st.planned_copies);
  CHECK(st.moved_copies <= st.planned_copies + 100);
  Verify(d, load);
}

TEST_CASE("drill: kill -9 of a source mid-stream merges from the other old replicas",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  // A source with work left, not the driver: preferably the one whose task is half done.
  int victim = mid.driver == 3 ? 2 : 3;
  int rank = 0;
  for (const StreamEntry& e : ParseStreams(mid.proc.out)) {
    const int source = static_cast<int>(e.source);
    if (source == static_cast<int>(mid.driver) || source < 1 || source > 3) continue;
    const int r = e.ranges_done == 0 && e.copies_done > 0 ? 2 : (e.ranges_done < e.ranges_total);
    if (r > rank) {
      victim = source;
      rank = r;
    }
  }
  WARN("killing source node " << victim << " (driver is " << mid.driver << ") at "
                              << mid.moved_copies << " of " << mid.planned_copies << " copies");
  const RebalanceStatus st = KillMidStreamAndFinish(d, victim, /*restart_before_watch=*/false,
                                                    /*allow_resume=*/false);
  WARN("source drill: planned " << st.planned_copies << " moved " << st.moved_copies
                                << " resumed tasks " << st.resumed_tasks);
  d.CliOk({"cluster", "start-node", std::to_string(victim)});
  Verify(d, load);
}

TEST_CASE("drill: kill -9 of the driver mid-stream hands the change to another node",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  const int driver = static_cast<int>(mid.driver);
  REQUIRE(driver >= 1);
  REQUIRE(driver <= 4);
  WARN("killing driver node " << driver << " at " << mid.moved_copies << " of "
                              << mid.planned_copies << " copies");
  d.CliOk({"cluster", "stop-node", std::to_string(driver), "--kill"});
  // Through a surviving node only: the takeover commits an epoch naming the new driver.
  const std::string via = d.Address(driver == 1 ? 2 : 1);
  RebalanceStatus seen;
  const bool handed_over = PollUntil(
      [&] {
        seen = d.StatusVia(via);
        return seen.ok() && seen.driver != 0 && seen.driver != driver;
      },
      seconds(60), milliseconds(200));
  INFO("last status via " << via << ": " << seen.proc.Text());
  REQUIRE(handed_over);
  WARN("driver " << driver << " -> " << seen.driver << " (epoch " << seen.epoch << ", state "
                 << seen.state << ")");
  Unthrottle(d);
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  const RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  CHECK(st.state == "done");
  WARN("driver drill: planned " << st.planned_copies << " moved " << st.moved_copies
                                << " resumed tasks " << st.resumed_tasks);
  d.CliOk({"cluster", "start-node", std::to_string(driver)});
  Verify(d, load);
}

TEST_CASE("drill: a replica SIGSTOPped across a whole change converges after SIGCONT",
          "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = TestKeys(20000);
  Up(d, 3, load);
  const ClientOptions co = ClientFor(d, {1, 2, 3});
  testing::HistoryChecker checker(co, LongHistory());
  const auto t0 = Clock::now();  // about the checker's time origin
  auto since_t0 = [&] {
    return std::to_string(std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count()) +
           " ms (wall " + WallClock() + ")";
  };
  REQUIRE(checker.Start().ok());
  REQUIRE(checker.WaitUntil([](const auto& s) { return s.acked >= 100; }, seconds(30)));

  const pid_t pid = d.Pid(3);
  REQUIRE(pid > 0);
  ContinueGuard cont;
  REQUIRE(kill(pid, SIGSTOP) == 0);
  cont.pid = pid;
  const std::string stopped_at = since_t0();
  // At once, as an operator would: the plan must not depend on the paused node answering.
  auto add = d.Cli({"cluster", "add-node", "--yes"}, seconds(40));
  {
    INFO("add-node right after SIGSTOP of node 3:\n" << add.Text());
    CHECK(add.exit_code == 0);
  }
  if (add.exit_code != 0) {
    // Go on with the rest of the drill: by now the failure detector has noticed node 3. An
    // add-node killed at the time limit leaves its new node running outside the cluster; stop
    // it, or `--dir` clients may ask it (it answers reads "not found").
    if (auto before = NodeMap(d.Address(1))) {
      for (int id = 4; id <= 8; ++id) {
        if (before->FindNode(static_cast<uint32_t>(id)) == nullptr && d.Pid(id) > 0) {
          auto stop = d.Cli({"cluster", "stop-node", std::to_string(id)});
          WARN("stopped node " << id << ", left outside the cluster by the killed add-node: "
                               << stop.Text());
        }
      }
    }
    add = d.Cli({"cluster", "add-node", "--yes"});
    INFO("add-node retried: " << add.Text());
    REQUIRE(add.exit_code == 0);
  }
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  const RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  CHECK(st.state == "done");
  CHECK(st.kind == "add");
  const std::string watched_at = since_t0();
  REQUIRE(kill(pid, SIGCONT) == 0);
  cont.pid = 0;
  const std::string continued_at = since_t0();
  WARN("node 3 SIGSTOP at t=" << stopped_at << "; change done (watch returned) at t=" << watched_at
                              << "; SIGCONT at t=" << continued_at);

  // Node 3 catches up with the map the others moved on to.
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  REQUIRE(map->nodes().size() == 4);
  std::string epochs;
  const bool converged = PollOneEpoch(*map, seconds(60), &epochs);
  INFO("epochs: " << epochs);
  CHECK(converged);
  auto status = d.Cli({"cluster", "status", "--json"});
  INFO(status.Text());
  CHECK(status.exit_code == 0);
  // Every replica holds the loaded keys the final placement gives it (they were written before
  // the pause, so node 3 has them too, and nobody may have dropped them).
  {
    std::vector<std::string> sample;
    for (int i = 0; i < load.count; i += std::max(1, load.count / 1000)) {
      sample.push_back("key:" + std::to_string(i));
    }
    for (const ClusterNode& n : map->nodes()) {
      std::vector<std::string> own;
      for (const std::string& key : sample) {
        const auto replicas = map->Replicas(map->TokenOf(key));
        if (std::find(replicas.begin(), replicas.end(), n.id) != replicas.end()) {
          own.push_back(key);
        }
      }
      INFO("node " << n.id << " should hold " << own.size() << " of the sampled keys");
      CHECK(LocallyHeld(n.address, *map, own) == static_cast<int>(own.size()));
    }
  }

  CHECK(HundredMoreAcked(checker));
  checker.Stop();
  const auto stats = checker.stats();
  // Requests a stopped node coordinated may time out: counted, not violations.
  WARN("history with node 3 stopped: " << HistoryText(stats));
  ClientOptions final_co;
  for (const ClusterNode& n : map->nodes()) final_co.seeds.push_back(n.address);
  Status final_check = checker.FinalCheck(final_co);
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  const auto violations = checker.Violations();
  // Where the violated keys live now, to tell whether the paused node is one of their replicas.
  const std::string listed = ListViolations(violations, *map);
  INFO(violations.size() << " violations (SIGSTOP at t=" << stopped_at
                         << ", SIGCONT at t=" << continued_at << "):\n"
                         << listed);
  CHECK(violations.empty());
  Verify(d, load);
}

TEST_CASE("drill: cancel mid-stream restores the old placement", "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  WARN("cancelling at " << mid.moved_copies << " of " << mid.planned_copies << " copies");
  auto cancel = d.Cli({"rebalance", "cancel"});
  INFO(cancel.Text());
  REQUIRE(cancel.exit_code == 0);
  bool cancelled = false;
  const RebalanceStatus st =
      d.PollStatus([](const RebalanceStatus& s) { return s.Ended(); }, seconds(60), &cancelled);
  INFO(st.proc.Text());
  REQUIRE(cancelled);
  CHECK(st.state == "cancelled");
  Verify(d, load);

  auto status = d.Cli({"cluster", "status", "--json"});
  INFO(status.Text());
  CHECK(status.exit_code == 0);
  CHECK(CountStringField(status.out, "map_state") == 3);
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  CHECK(map->nodes().size() == 3);
  CHECK(!map->has_pending());

  auto again = d.Cli({"rebalance", "cancel"});
  INFO(again.Text());
  CHECK(again.exit_code != 0);
  CHECK(!again.err.empty());
}

TEST_CASE("drill: cancel of a finished change is refused", "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = std::max(1, TestKeys(20000) / 10);
  Up(d, 3, load);
  auto add = d.Cli({"cluster", "add-node", "--yes"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  REQUIRE(d.Status().state == "done");
  auto cancel = d.Cli({"rebalance", "cancel"});
  INFO(cancel.Text());
  CHECK(cancel.exit_code != 0);
  // A clear message: it says why (no change running / the change is done).
  CHECK((cancel.err.find("done") != std::string::npos ||
         cancel.err.find("no change is running") != std::string::npos));
  CHECK(d.Status().state == "done");  // and nothing changed
  Verify(d, load);
}

TEST_CASE("drill: a dead node is removed by streaming from the surviving replicas",
          "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = TestKeys(20000);
  Up(d, 4, load);
  d.CliOk({"cluster", "stop-node", "4", "--kill"});
  // At once, as an operator would: the plan must not depend on the dead node answering.
  auto remove = d.Cli({"cluster", "remove-node", "4", "--yes"});
  {
    INFO("remove-node right after kill -9 of node 4:\n" << remove.Text());
    CHECK(remove.exit_code == 0);
  }
  if (remove.exit_code != 0) {
    // Go on with the rest of the drill once the failure detector has noticed node 4.
    const bool begun = PollUntil(
        [&] {
          remove = d.Cli({"cluster", "remove-node", "4", "--yes"});
          return remove.exit_code == 0;
        },
        seconds(30), milliseconds(500));
    INFO("remove-node retried: " << remove.Text());
    REQUIRE(begun);
  }
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  const RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  CHECK(st.state == "done");
  CHECK(st.kind == "remove");
  CHECK(st.node_id == 4);
  Verify(d, load);

  // RF = 3 on the 3 remaining nodes: each holds every key.
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  CHECK(map->nodes().size() == 3);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> pick(0, load.count - 1);
  std::vector<std::string> sample;
  for (int i = 0; i < 500; ++i) sample.push_back("key:" + std::to_string(pick(rng)));
  for (int id = 1; id <= 3; ++id) {
    INFO("node " << id);
    CHECK(LocallyHeld(d.Address(id), *map, sample) == 500);
  }
}

}  // namespace shardkv::drill
