// Background anti-entropy (design.md "Anti-entropy", RepairScheduler): one replica's data is
// damaged directly through its storage while it is stopped (keys removed, values replaced by
// older versions, a tombstone removed); with no repair command run and no client read of the
// keys (read repair would hide a repair that does nothing), the nodes' own background passes
// converge every replica within the period, and no deleted key comes back.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>

#include "metrics/http_get.h"
#include "rebalance/repair_scheduler.h"
#include "rebalance_test_util.h"
#include "shardkv/stats.h"
#include "storage/storage.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using rebalance_test::Contents;
using rebalance_test::ReadAll;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;

namespace {

// 3 nodes, RF 3 (every node holds every key), 8 jump shards: each node drives a few ranges.
ClusterParams Params() { return ClusterParams{PlacementMode::kJump, 160, 8, 3, 2, 2}; }

std::string Key(int i) { return "key-" + std::to_string(i); }

constexpr int kKeys = 200;
constexpr int kDeleted = 20;  // key-0 .. key-19 are deleted

// Counter `name` of node `id` (-1 if it did not answer).
int64_t Counter(Client& client, const InProcessCluster& c, uint32_t id, std::string_view name) {
  auto stats = client.NodeStats(c.Address(id));
  if (!stats.ok()) return -1;
  auto it = stats->counters.find(std::string(name));
  return it == stats->counters.end() ? -1 : it->second;
}

// Writes the keys (to every replica) and deletes the first kDeleted.
void Fill(InProcessCluster& c) {
  auto client = c.Connect();
  REQUIRE(client.ok());
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE((*client)->Put(Key(i), "value-" + std::to_string(i), Consistency::kAll).ok());
  }
  for (int i = 0; i < kDeleted; ++i) REQUIRE((*client)->Delete(Key(i), Consistency::kAll).ok());
}

// Stops node `id`, damages its storage (5 tombstones removed, 10 live keys removed, 10 values
// replaced by older versions) and returns the records the undamaged replicas hold. The other
// nodes keep running: their passes meet node `id` down, then back.
Contents Damage(InProcessCluster& c, uint32_t id, int* damaged) {
  c.StopNode(id);
  const Contents before = ReadAll(c, id);
  REQUIRE(before.size() == static_cast<size_t>(kKeys));
  auto s = storage::Storage::Open(c.DataDir(id) + "/db", storage::StorageOptions{});
  REQUIRE(s.ok());
  *damaged = 0;
  for (const auto& [k, env] : before) {
    const int i = std::stoi(k.second.substr(4));
    if (i < 5) {  // a tombstone missing
      REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, nullptr).ok());
    } else if (i >= 100 && i < 110) {  // a live key removed
      REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, nullptr).ok());
    } else if (i >= 150 && i < 160) {  // an older version
      storage::Envelope old{env.timestamp - 1, env.node_id, false, "older"};
      REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, &old).ok());
    } else {
      continue;
    }
    ++*damaged;
  }
  REQUIRE((*s)->Close().ok());
  return before;
}

// Waits until node `id` has been sent `damaged` records by repair; returns the time it took.
double WaitRepaired(Client& client, const InProcessCluster& c, uint32_t id, int damaged,
                    std::chrono::milliseconds limit) {
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(
      Eventually([&] { return Counter(client, c, id, stats::repair_keys_in) >= damaged; }, limit));
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("background repair: converges removed keys, older versions and a missing tombstone",
          "[repair]") {
  InProcessCluster c(3, Params());
  constexpr uint64_t kPeriodMs = 2000;
  c.TuneNodes([](uint32_t id, NodeOptions* o) {
    o->repair_period_ms = kPeriodMs;
    if (id == 1) o->metrics_listen = "127.0.0.1:0";
  });
  REQUIRE(c.Start().ok());
  Fill(c);
  int damaged = 0;
  const Contents expected = Damage(c, 2, &damaged);
  REQUIRE(damaged == 25);
  REQUIRE(c.RestartNode(2).ok());
  auto client = testing::MustConnect(c);
  // No command, no read of the keys: the passes alone. Every range is compared within a period
  // of node 2's return (a comparison that met it down is retried a period later).
  const double took =
      WaitRepaired(*client, c, 2, damaged, std::chrono::milliseconds(kPeriodMs * 3));
  WARN("background repair (period " << kPeriodMs << " ms) converged " << damaged
                                    << " damaged keys in " << took << " s");
  // (f) The figures: exactly the damaged keys went to node 2, from the nodes driving the ranges.
  int64_t out = 0, compared = 0, differed = 0, tree_bytes = 0;
  for (uint32_t id = 1; id <= 3; ++id) {
    CHECK(Counter(*client, c, id, stats::repair_background) == 1);
    CHECK(Counter(*client, c, id, stats::repair_period_ms) == static_cast<int64_t>(kPeriodMs));
    out += Counter(*client, c, id, stats::repair_keys_out);
    compared += Counter(*client, c, id, stats::repair_ranges_compared);
    differed += Counter(*client, c, id, stats::repair_ranges_differed);
    tree_bytes += Counter(*client, c, id, stats::repair_tree_bytes);
  }
  // Node 2 lacked them all: the others' pushes and its own comparisons wrote exactly those.
  CHECK(Counter(*client, c, 2, stats::repair_keys_in) == damaged);
  CHECK(Counter(*client, c, 2, stats::repair_keys_out) == 0);
  CHECK(out <= damaged);
  CHECK(compared > 0);
  CHECK(differed > 0);
  CHECK(tree_bytes > 0);
  // Every node completes a pass in which every range was compared (node 2 restarted: its own
  // first pass), so each reports its last full repair time.
  CHECK(Eventually(
      [&] {
        for (uint32_t id = 1; id <= 3; ++id) {
          if (Counter(*client, c, id, stats::repair_passes) < 1) return false;
          if (Counter(*client, c, id, stats::repair_last_full_ms) <= 0) return false;
        }
        return true;
      },
      std::chrono::milliseconds(kPeriodMs * 3)));
  // And the metrics endpoint exports them.
  const auto reply = testing::HttpGet(c.node(1)->metrics_port(), "/metrics");
  REQUIRE(reply.status == 200);
  using testing::SampleValue;
  CHECK(SampleValue(reply.body, "shardkv_repair_ranges_compared_total") > 0);
  CHECK(SampleValue(reply.body, "shardkv_repair_last_full_pass_timestamp_seconds") > 1e9);
  CHECK(SampleValue(reply.body, "shardkv_repair_background") == 1);
  CHECK(SampleValue(reply.body, "shardkv_repair_period_seconds") == Approx(2.0));
  CHECK(SampleValue(reply.body, "shardkv_repair_tree_bytes_total") > 0);
  client.reset();
  rebalance_test::CheckEveryNodeHolds(c, expected);
}

TEST_CASE("background repair: a 60 s tombstone grace converges within its default 6 s period",
          "[repair]") {
  // The figure: the period defaults to grace / 10.
  constexpr uint64_t kGraceMs = 60000;
  InProcessCluster c(3, Params(), kGraceMs);
  REQUIRE(c.Start().ok());
  Fill(c);
  int damaged = 0;
  const Contents expected = Damage(c, 3, &damaged);
  REQUIRE(c.RestartNode(3).ok());
  auto client = testing::MustConnect(c);
  REQUIRE(Counter(*client, c, 1, stats::repair_period_ms) == 6000);
  const double took = WaitRepaired(*client, c, 3, damaged, std::chrono::seconds(12));
  WARN("60 s tombstone grace, default period 6 s: " << damaged << " damaged keys converged in "
                                                    << took << " s after the node returned");
  // Within the period, give or take a comparison and the 20 ms poll.
  CHECK(took <= 6.5);
  client.reset();
  rebalance_test::CheckEveryNodeHolds(c, expected);
}

TEST_CASE("background repair: off, nothing is repaired", "[repair]") {
  InProcessCluster c(3, Params());
  c.TuneNodes([](uint32_t, NodeOptions* o) {
    o->background_repair = false;
    o->repair_period_ms = 1000;
  });
  REQUIRE(c.Start().ok());
  Fill(c);
  int damaged = 0;
  const Contents expected = Damage(c, 2, &damaged);
  REQUIRE(c.RestartNode(2).ok());
  auto client = testing::MustConnect(c);
  for (uint32_t id = 1; id <= 3; ++id) {
    CHECK(Counter(*client, c, id, stats::repair_background) == 0);
  }
  // Three periods pass (a bounded poll that must never see a comparison).
  const bool compared = Eventually(
      [&] {
        for (uint32_t id = 1; id <= 3; ++id) {
          if (Counter(*client, c, id, stats::repair_ranges_compared) != 0) return true;
        }
        return false;
      },
      std::chrono::seconds(3));
  CHECK_FALSE(compared);
  client.reset();
  for (uint32_t id = 1; id <= 3; ++id) c.StopNode(id);
  CHECK(ReadAll(c, 2).size() == expected.size() - 15);  // the 15 removed records stay removed
  CHECK(ReadAll(c, 1) == expected);
}

TEST_CASE("background repair: clients first, the rate divides while clients are busy", "[repair]") {
  using rebalance::RepairScheduler;
  using rebalance::RepairStepWait;
  // 10,000 keys at 10,000 keys/s: 1 s when idle.
  CHECK(RepairStepWait(10000, 10000, 0).count() == Approx(1.0));
  CHECK(RepairStepWait(10000, 10000, RepairScheduler::kBusyRequestsPerSecond).count() ==
        Approx(1.0));
  // Past the busy threshold: kBusyRateDivisor times longer.
  CHECK(RepairStepWait(10000, 10000, RepairScheduler::kBusyRequestsPerSecond + 1).count() ==
        Approx(static_cast<double>(RepairScheduler::kBusyRateDivisor)));
  CHECK(RepairStepWait(10000, 10000, 8000).count() == Approx(5.0));
  // The lowest rates stay at 1 key/s, never a division by zero.
  CHECK(RepairStepWait(3, 1, 8000).count() == Approx(3.0));
  CHECK(RepairStepWait(3, 0, 0).count() == Approx(3.0));
}
