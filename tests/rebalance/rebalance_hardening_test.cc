// In-process hardening cases for the rebalancer (issue 9): a change of 200,000 ranges on a
// bounded thread count, refusals before anything is committed, cancel by the joining node, a
// failed change that keeps its counts, and a second driver death that fails the change.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "rebalance/plan.h"
#include "rebalance/schedule.h"
#include "rebalance_test_util.h"

using namespace shardkv;
using namespace shardkv::rebalance_test;
using shardkv::rebalance::ChangeState;
using shardkv::rebalance::RebalanceReport;
using shardkv::testing::InProcessCluster;

namespace {

int ThreadCount() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

std::map<std::string, std::string> AddArgs(const InProcessCluster& c, uint32_t id,
                                           const std::string& rate_mb = "0") {
  return {{"kind", "add"},
          {"node_id", std::to_string(id)},
          {"address", c.Address(id)},
          {"rate_mb", rate_mb}};
}

// Under ASan+UBSan the four in-process nodes run several times slower: at 64,000 vnodes their
// map installs kept them past the gossip deadline and the drive was taken over twice (the change
// failed by the takeover-once rule, seen in CI). The sanitizer build checks the same mechanism on
// a tenth of the ring; the release build runs the full 200,000 ranges.
#if defined(__SANITIZE_ADDRESS__)
constexpr uint32_t kScaleVnodes = 6400;
constexpr uint64_t kScaleMinRanges = 20000;
#else
constexpr uint32_t kScaleVnodes = 64000;
constexpr uint64_t kScaleMinRanges = 200000;
#endif

}  // namespace

TEST_CASE("rebalance: a change of 200,000 ranges completes on a bounded thread count",
          "[rebalance][scale]") {
  ClusterParams p;
  p.mode = PlacementMode::kRing;
  // 3 nodes at 64,000 vnodes + 1 of weight 2 (128,000 vnodes): over 200,000 moving ranges (the
  // issue's 20,000 vnodes made 45,000, and a thread for each), on a smaller ring than weight 1
  // would need, so the four in-process nodes stay responsive on a shared 2-core machine.
  p.vnodes = kScaleVnodes;
  InProcessCluster c(3, p);
  REQUIRE(c.Start().ok());
  Load(c, 3000);
  REQUIRE(c.AddStandaloneNode().ok());
  const int baseline = ThreadCount();
  REQUIRE(baseline > 0);
  std::atomic<bool> stop{false};
  std::atomic<int> peak{0};
  std::thread sampler([&] {
    while (!stop.load()) {
      peak = std::max(peak.load(), ThreadCount());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  struct Joiner {
    std::atomic<bool>& stop;
    std::thread& t;
    ~Joiner() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } joiner{stop, sampler};
  const auto begin_start = std::chrono::steady_clock::now();
  auto args = AddArgs(c, 4);
  args["weight"] = "2";
  auto begun = Admin(c, 1, "begin", args, std::chrono::milliseconds(180000));
  const double begin_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin_start).count();
  INFO(begun.status().ToString());
  REQUIRE(begun.ok());
  CHECK(begun->record.planned_token_ranges >= kScaleMinRanges);
  CHECK(begun->record.planned_ranges <= 100);  // stream tasks: grouped, not one per range
  const RebalanceReport end = WaitFor(c, 1, Ended, std::chrono::seconds(240));
  stop = true;
  if (sampler.joinable()) sampler.join();
  INFO("error: " << end.record.error);
  REQUIRE(end.record.state == ChangeState::kDone);
  CHECK(end.record.moved_copies == end.record.planned_copies);
  WARN("threads: baseline " << baseline << ", peak " << peak.load() << "; "
                            << end.record.planned_token_ranges << " ranges in "
                            << end.record.planned_ranges << " tasks; begin " << begin_s
                            << " s, change " << end.elapsed_s << " s");
  // The pool (at most kMaxStreamWorkers) plus a few short-lived helpers, never one per task.
  CHECK(peak.load() <= baseline + static_cast<int>(rebalance::kMaxStreamWorkers) + 8);
}

TEST_CASE("rebalance: removing the last node is refused, plan and begin", "[rebalance]") {
  InProcessCluster c(1, ClusterParams{});
  REQUIRE(c.Start().ok());
  for (const char* cmd : {"plan", "begin"}) {
    auto r = Admin(c, 1, cmd, {{"kind", "remove"}, {"node_id", "1"}});
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    CHECK(r.status().message() == "cannot remove the last node");
  }
  auto m = MapOf(c, 1);
  REQUIRE(m.ok());
  CHECK_FALSE(m->has_pending());
}

TEST_CASE("rebalance: the plan reports replication after a remove", "[rebalance]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  auto r = Admin(c, 1, "plan", {{"kind", "remove"}, {"node_id", "3"}});
  REQUIRE(r.ok());
  CHECK(r->record.replicas_configured == 3);
  CHECK(r->record.replicas_after == 2);
  CHECK(r->record.write_quorum_after == 2);
  CHECK(r->record.read_quorum_after == 2);
}

TEST_CASE("rebalance: joining a node of another cluster is refused before any commit",
          "[rebalance]") {
  InProcessCluster a(3, ClusterParams{});
  REQUIRE(a.Start().ok());
  // Cluster B: two nodes adopted into a cluster with another id (InProcessCluster::Start
  // would give it A's id).
  InProcessCluster b(0, ClusterParams{});
  REQUIRE(b.AddStandaloneNode().ok());
  REQUIRE(b.AddStandaloneNode().ok());
  auto b_map = ClusterMap::Create(
      0xB0B, ClusterParams{},
      {{1, b.Address(1), 1.0, NodeState::kUp}, {2, b.Address(2), 1.0, NodeState::kUp}}, 1);
  REQUIRE(b_map.ok());
  for (uint32_t id : {1u, 2u}) {
    net::Request req;
    req.body = net::InstallMapRequest{b_map->Encode(), 0, true};
    auto reply = b.Call(id, std::move(req));
    REQUIRE(reply.ok());
    REQUIRE(reply->ok());
  }
  auto before = MapOf(a, 1);
  REQUIRE(before.ok());
  for (const char* cmd : {"plan", "begin"}) {
    auto r = Admin(a, 1, cmd, {{"kind", "add"}, {"node_id", "4"}, {"address", b.Address(1)}});
    REQUIRE_FALSE(r.ok());
    INFO(r.status().ToString());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
    CHECK(r.status().message().find("belongs to cluster") != std::string::npos);
    CHECK(r.status().message().find("not this cluster") != std::string::npos);
  }
  // Nothing was committed: same epoch, no pending change, B untouched.
  auto after = MapOf(a, 1);
  REQUIRE(after.ok());
  CHECK(after->epoch() == before->epoch());
  CHECK_FALSE(after->has_pending());
  auto theirs = MapOf(b, 1);
  REQUIRE(theirs.ok());
  CHECK(theirs->nodes().size() == 2);
  CHECK(theirs->cluster_id() == 0xB0B);
  // A fresh standalone node is accepted by the same check.
  REQUIRE(a.AddStandaloneNode().ok());
  CHECK(Admin(a, 1, "plan", AddArgs(a, 4)).ok());
}

TEST_CASE("rebalance: the joining node cancels its own add, cancel says OK and it is cancelled",
          "[rebalance][cancel]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  Load(c, 4000, 1000);  // ~3 MB to node 4 at 1 MB/s: still streaming when cancelled
  REQUIRE(c.AddStandaloneNode().ok());
  REQUIRE(Admin(c, 1, "begin", AddArgs(c, 4, "1")).ok());
  // A commit by node 4 makes it the claimant (the driver), as when the CLI talks to it.
  auto throttled = Admin(c, 4, "throttle", {{"rate_mb", "1"}});
  REQUIRE(throttled.ok());
  CHECK(throttled->driver == 4);
  auto cancelled = Admin(c, 4, "cancel");
  INFO(cancelled.status().ToString());
  REQUIRE(cancelled.ok());
  for (uint32_t id : {1u, 2u, 3u}) {
    auto m = MapOf(c, id);
    REQUIRE(m.ok());
    CHECK_FALSE(m->has_pending());
    CHECK(m->nodes().size() == 3);
    CHECK(m->FindNode(4) == nullptr);
    CHECK(m->claimant() != 4);
  }
  auto s = Admin(c, 1, "status");
  REQUIRE(s.ok());
  CHECK(s->record.state == ChangeState::kCancelled);
  // Node 4 holds the cancelled map too (as a departing node): it drives nothing more.
  auto m4 = MapOf(c, 4);
  REQUIRE(m4.ok());
  CHECK_FALSE(m4->has_pending());
}

TEST_CASE("rebalance: throttle --rate 0 means unthrottled", "[rebalance]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  Load(c, 2000, 1000);
  REQUIRE(c.AddStandaloneNode().ok());
  REQUIRE(Admin(c, 1, "begin", AddArgs(c, 4, "1")).ok());
  auto t = Admin(c, 1, "throttle", {{"rate_mb", "0"}});
  REQUIRE(t.ok());
  CHECK(t->record.rate_bytes_per_s == 0);
  const RebalanceReport end = WaitFor(c, 1, Ended);
  CHECK(end.record.state == ChangeState::kDone);
  CHECK(end.record.rate_bytes_per_s == 0);
}

TEST_CASE("rebalance: a failed change keeps what it moved, resume finishes it",
          "[rebalance][failed]") {
  InProcessCluster c(3, ClusterParams{});
  REQUIRE(c.Start().ok());
  Load(c, 20000, 1000);  // ~15 MB to node 4 at 1 MB/s: still streaming when it stops
  REQUIRE(c.AddStandaloneNode().ok());
  REQUIRE(Admin(c, 1, "begin", AddArgs(c, 4, "1")).ok());
  // Some copies moved, then the destination goes away: the tasks fail for
  // task_failure_timeout (30 s) and the change fails.
  WaitFor(c, 1, [](const RebalanceReport& r) { return r.copies_done > 200; });
  c.StopNode(4);
  const RebalanceReport failed = WaitFor(
      c, 1, [](const RebalanceReport& r) { return r.record.state == ChangeState::kFailed; });
  INFO(failed.record.error);
  CHECK(failed.record.moved_copies > 200);
  CHECK(failed.copies_done == failed.record.moved_copies);
  CHECK(failed.record.failed_driver == 1);
  INFO("moved " << failed.record.moved_copies << " of " << failed.record.planned_copies);
  REQUIRE(c.RestartNode(4).ok());
  REQUIRE(Admin(c, 1, "resume").ok());
  REQUIRE(Admin(c, 1, "throttle", {{"rate_mb", "0"}}).ok());
  const RebalanceReport end = WaitFor(c, 1, Ended);
  CHECK(end.record.state == ChangeState::kDone);
  CHECK(end.record.takeovers == 0);
  // Resumed from checkpoints: the copies streamed before the failure are not streamed again.
  CHECK(end.record.resumed_tasks > 0);
  CHECK(end.record.resumed_copies > 0);
  CHECK(end.record.moved_copies == end.record.planned_copies);
}

TEST_CASE("rebalance: a second driver death while streaming fails the change, naming it",
          "[rebalance][takeover]") {
  ClusterParams p;
  InProcessCluster c(4, p);
  REQUIRE(c.Start().ok());
  Load(c, 20000, 1000);  // ~12 MB to node 5 at 1 MB/s: streaming through both deaths
  REQUIRE(c.AddStandaloneNode().ok());
  // Driven by node 3; node 1 takes over when it dies (the lowest live id), then node 1 dies.
  REQUIRE(Admin(c, 3, "begin", AddArgs(c, 5, "1")).ok());
  c.StopNode(3);
  const RebalanceReport taken = WaitFor(
      c, 2, [](const RebalanceReport& r) { return r.driver == 1 && r.record.takeovers == 1; });
  CHECK(taken.record.state == ChangeState::kStreaming);
  c.StopNode(1);
  const RebalanceReport failed = WaitFor(
      c, 2, [](const RebalanceReport& r) { return r.record.state == ChangeState::kFailed; });
  INFO(failed.record.error);
  CHECK(failed.record.failed_driver == 1);
  CHECK(failed.record.error.find("driver node 1 died") != std::string::npos);
  // And no further takeover drives it: it stays failed until resume or cancel.
  std::this_thread::sleep_for(std::chrono::seconds(2));  // a negative check: nothing changes
  auto still = Admin(c, 2, "status");
  REQUIRE(still.ok());
  CHECK(still->record.state == ChangeState::kFailed);
  auto cancelled = Admin(c, 2, "cancel");
  INFO(cancelled.status().ToString());
  CHECK(cancelled.ok());
}
