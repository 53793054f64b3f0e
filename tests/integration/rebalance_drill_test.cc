// Rebalance fault drills on real shardkv-node processes (design.md "Rebalancing: the transition
// protocol" and "Testing", the fault tests): a node added and removed under a running history
// checker, kill -9 of the destination, of a source and of the driver mid-stream, a replica
// SIGSTOPped across a whole change, cancel, and removal of a dead node.
//
// The node processes are run by the shardkv CLI (`cluster up`, `add-node`, `stop-node`,
// `start-node`); the changes are driven and watched through shardkv::Admin. Every wait is a poll
// with a deadline, and every CLI run has one too (a hung command fails the drill instead of
// hanging ctest). Key counts come from SHARDKV_TEST_KEYS. A drill that
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
#include "shardkv/admin.h"
#include "shardkv/change.h"
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
bool TaskHalfDone(const ChangeReport& s) {
  for (const StreamProgress& e : s.streams) {
    if (e.ranges_total == 1 && e.ranges_done == 0 && e.copies_done > 0 &&
        e.copies_done * 2 <= e.copies_planned) {
      return true;
    }
  }
  return false;
}

// Waits for the change to end (what `rebalance watch` does) and REQUIREs it done.
ChangeReport WaitDone(Drill& d) {
  auto end = d.WaitEnded();
  INFO(end.status().ToString());
  REQUIRE(end.ok());
  INFO(Text(*end));
  REQUIRE(end->record.state == ChangeState::kDone);
  return *end;
}

// `cluster add-node` (it starts the node process) throttled to 1 MB/s and one stream, then polls
// until a stream task is half done (SlowLoad() explains why that happens). Returns that status.
ChangeReport AddNodeSlowly(Drill& d) {
  auto add = d.Cli({"cluster", "add-node", "--yes", "--rate", "1", "--streams", "1"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  auto st = d.WaitFor(
      [](const ChangeReport& s) {
        return s.record.state == ChangeState::kStreaming && TaskHalfDone(s);
      },
      seconds(60));
  INFO("last status: " << st.status().ToString() << "\n" << Text(d.Status()));
  REQUIRE(st.ok());
  REQUIRE(st->copies_done > 0);
  REQUIRE(st->copies_done < st->record.planned_copies);  // really mid-stream
  return *st;
}

// Lifts the throttle once the fault is in, so the drill does not wait out 1 MB/s. A task already
// running keeps its rate to its end.
void Unthrottle(Drill& d) {
  const AdminReply t = d.admin().SetThrottle(uint64_t{256} << 20, 2);
  INFO(Text(t));
  CHECK(t.status.ok());
}

// Waits for the change to end; if it went to failed meanwhile, resumes it once and waits again
// (design: a failed change continues from its checkpoints). Returns the change once done.
ChangeReport WaitDoneResumingOnce(Drill& d, bool* resumed) {
  *resumed = false;
  auto end = d.WaitEnded();
  INFO(end.status().ToString());
  REQUIRE(end.ok());
  if (end->record.state == ChangeState::kFailed) {
    WARN("change failed (" << end->record.error << "); resuming\n" << Text(*end));
    const AdminReply resume = d.admin().Resume();
    INFO(Text(resume));
    CHECK(resume.status.ok());
    *resumed = true;
    return WaitDone(d);
  }
  INFO(Text(*end));
  REQUIRE(end->record.state == ChangeState::kDone);
  return *end;
}

// The moved fraction against the ideal: within `factor` either way.
void CheckFraction(const ChangeReport& st, double factor, const std::string& what) {
  const double fraction = MovedFraction(st);
  const double ideal = st.record.ideal_fraction;
  WARN(what << ": moved " << st.record.moved_copies << " of " << st.record.total_copies
            << " copies = " << fraction << " (ideal " << ideal << ", ratio " << fraction / ideal
            << "), planned " << st.record.planned_copies << ", remapped keys "
            << st.record.remapped_keys);
  REQUIRE(st.record.total_copies > 0);
  REQUIRE(ideal > 0);
  CHECK(fraction <= ideal * factor);
  CHECK(fraction >= ideal / factor);
  // Only the history checker's 100 keys change while the change runs.
  CHECK(std::abs(static_cast<double>(st.record.moved_copies) -
                 static_cast<double>(st.record.planned_copies)) <= 100);
}

// ---- Drill 1: add then remove a node under the history checker -------------------------------

// One membership change of AddThenRemove on node 4 (begun by `begin`, of `kind`) under the
// history checker: it runs to done without client errors and moves about the ideal fraction.
void ChangeNode4(Drill& d, const std::function<void()>& begin, const std::string& kind,
                 const std::string& mode, double factor) {
  begin();
  const ChangeReport st = WaitDone(d);
  INFO("after " << kind << ": " << Text(st));
  CHECK(ChangeKindName(st.record.kind) == kind);
  CHECK(st.record.node_id == 4);
  CHECK(st.record.client_errors == 0);
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

  // The CLI starts node 4 and begins its add; Admin removes it again.
  const auto add_node = [&] { d.CliOk({"cluster", "add-node", "--yes"}); };
  ChangeNode4(d, add_node, "add", mode, factor);
  REQUIRE(HundredMoreAcked(checker));
  ChangeNode4(
      d,
      [&] {
        const AdminReply r =
            d.admin().Begin(ChangeRequest{ChangeKind::kRemove, 4, "", 1.0}, ChangeThrottle{});
        INFO(Text(r));
        REQUIRE(r.status.ok());
      },
      "remove", mode, factor);
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
// Returns the change once done. `allow_resume`: a change that went to failed meanwhile may be
// resumed once.
ChangeReport KillMidStreamAndFinish(Drill& d, int victim, bool restart_before_watch,
                                    bool allow_resume) {
  d.CliOk({"cluster", "stop-node", std::to_string(victim), "--kill"});
  if (restart_before_watch) {
    d.CliOk({"cluster", "start-node", std::to_string(victim)});
  }
  Unthrottle(d);
  bool resumed = false;
  return allow_resume ? WaitDoneResumingOnce(d, &resumed) : WaitDone(d);
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
  const ChangeReport mid = AddNodeSlowly(d);
  WARN("killing destination node 4 at " << mid.copies_done << " of " << mid.record.planned_copies
                                        << " copies");
  const ChangeReport st = KillMidStreamAndFinish(d, 4, /*restart_before_watch=*/true,
                                                 /*allow_resume=*/true);
  WARN("destination drill: planned " << st.record.planned_copies << " moved "
                                     << st.record.moved_copies << " resumed tasks "
                                     << st.record.resumed_tasks);
  CHECK(st.record.resumed_tasks > 0);
  CHECK(st.record.moved_copies >= st.record.planned_copies);
  CHECK(st.record.moved_copies <= st.record.planned_copies + 100);
  Verify(d, load);
}

TEST_CASE("drill: kill -9 of a source mid-stream merges from the other old replicas",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const ChangeReport mid = AddNodeSlowly(d);
  // A source with work left, not the driver: preferably the one whose task is half done.
  int victim = mid.driver == 3 ? 2 : 3;
  int rank = 0;
  for (const StreamProgress& e : mid.streams) {
    const int source = static_cast<int>(e.source);
    if (source == static_cast<int>(mid.driver) || source < 1 || source > 3) continue;
    const int r = e.ranges_done == 0 && e.copies_done > 0 ? 2 : (e.ranges_done < e.ranges_total);
    if (r > rank) {
      victim = source;
      rank = r;
    }
  }
  WARN("killing source node " << victim << " (driver is " << mid.driver << ") at "
                              << mid.copies_done << " of " << mid.record.planned_copies
                              << " copies");
  const ChangeReport st = KillMidStreamAndFinish(d, victim, /*restart_before_watch=*/false,
                                                 /*allow_resume=*/false);
  WARN("source drill: planned " << st.record.planned_copies << " moved " << st.record.moved_copies
                                << " resumed tasks " << st.record.resumed_tasks);
  d.CliOk({"cluster", "start-node", std::to_string(victim)});
  Verify(d, load);
}

TEST_CASE("drill: kill -9 of the driver mid-stream hands the change to another node",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const ChangeReport mid = AddNodeSlowly(d);
  const int driver = static_cast<int>(mid.driver);
  REQUIRE(driver >= 1);
  REQUIRE(driver <= 4);
  WARN("killing driver node " << driver << " at " << mid.copies_done << " of "
                              << mid.record.planned_copies << " copies");
  d.CliOk({"cluster", "stop-node", std::to_string(driver), "--kill"});
  // Through a surviving node only: the takeover commits an epoch naming the new driver.
  const std::string via = d.Address(driver == 1 ? 2 : 1);
  auto admin_via = testing::AdminFor({via}, d.ClusterId());
  const auto old_driver = static_cast<uint32_t>(driver);
  auto seen = testing::WaitChange(
      *admin_via, [&](const ChangeReport& r) { return r.driver != 0 && r.driver != old_driver; },
      seconds(60));
  INFO("last status via " << via << ": " << seen.status().ToString());
  REQUIRE(seen.ok());
  WARN("driver " << driver << " -> " << seen->driver << " (epoch " << seen->epoch << ", state "
                 << ChangeStateName(seen->record.state) << ")");
  Unthrottle(d);
  const ChangeReport st = WaitDone(d);
  WARN("driver drill: planned " << st.record.planned_copies << " moved " << st.record.moved_copies
                                << " resumed tasks " << st.record.resumed_tasks);
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
  const ChangeReport st = WaitDone(d);
  CHECK(st.record.kind == ChangeKind::kAdd);
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
  // The placement to check against is the one they converged on: the leader reports a change
  // done once it applied the final map, possibly before node 1 installed it (read above).
  map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
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
  const ChangeReport mid = AddNodeSlowly(d);
  WARN("cancelling at " << mid.copies_done << " of " << mid.record.planned_copies << " copies");
  const AdminReply cancel = d.admin().Cancel();
  INFO(Text(cancel));
  REQUIRE(cancel.status.ok());
  auto st = d.WaitEnded(seconds(60));
  INFO(st.status().ToString());
  REQUIRE(st.ok());
  INFO(Text(*st));
  CHECK(st->record.state == ChangeState::kCancelled);
  Verify(d, load);

  auto status = d.Cli({"cluster", "status", "--json"});
  INFO(status.Text());
  CHECK(status.exit_code == 0);
  CHECK(CountStringField(status.out, "map_state") == 3);
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  CHECK(map->nodes().size() == 3);
  CHECK(!map->has_pending());

  const AdminReply again = d.admin().Cancel();
  INFO(Text(again));
  CHECK(again.status.code() == Status::Code::kFailedPrecondition);
  CHECK_FALSE(again.status.message().empty());
}

TEST_CASE("drill: cancel of a finished change is refused", "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = std::max(1, TestKeys(20000) / 10);
  Up(d, 3, load);
  d.CliOk({"cluster", "add-node", "--yes"});
  WaitDone(d);
  const AdminReply cancel = d.admin().Cancel();
  INFO(Text(cancel));
  CHECK(cancel.status.code() == Status::Code::kFailedPrecondition);
  // A clear message: it says why (no change running / the change is done).
  CHECK((cancel.status.message().find("done") != std::string::npos ||
         cancel.status.message().find("no change is running") != std::string::npos));
  const AdminReply after = d.Status();
  INFO(Text(after));
  REQUIRE(after.status.ok());
  CHECK(after.report.record.state == ChangeState::kDone);  // and nothing changed
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
  const ChangeRequest remove_4{ChangeKind::kRemove, 4, "", 1.0};
  AdminReply remove = d.admin().Begin(remove_4, ChangeThrottle{});
  {
    INFO("remove right after kill -9 of node 4: " << Text(remove));
    CHECK(remove.status.ok());
  }
  if (!remove.status.ok()) {
    // Go on with the rest of the drill once the failure detector has noticed node 4.
    const bool begun = PollUntil(
        [&] {
          remove = d.admin().Begin(remove_4, ChangeThrottle{});
          return remove.status.ok();
        },
        seconds(30), milliseconds(500));
    INFO("remove retried: " << Text(remove));
    REQUIRE(begun);
  }
  const ChangeReport st = WaitDone(d);
  CHECK(st.record.kind == ChangeKind::kRemove);
  CHECK(st.record.node_id == 4);
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
