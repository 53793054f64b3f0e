// A node that needs repair is brought back by repair of its ranges, not only by `--rebuild`
// (issue 29, design.md "Needs repair"): it stays out of reads and stream sources until it has
// compared every range it holds with the other replicas, streaming only what it missed, then
// serves, and no key deleted while it was away comes back. Where another replica may have purged
// a tombstone it lacks (that replica's GC does not wait for repairs), repair refuses the range and
// says to rebuild.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "shardkv/admin.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"
#include "testing/needs_repair.h"

using namespace shardkv;
using shardkv::testing::CounterOf;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;
using shardkv::testing::Marks;

namespace {

// Short, so hints expire within the test; long enough that no write of the test is late.
constexpr uint64_t kBackGraceMs = 2000;
constexpr int kGone = 20;     // deleted while node 3 was away
constexpr int kChanged = 10;  // overwritten while it was away
constexpr int kAdded = 10;    // written while it was away
constexpr int kSame = 10;     // untouched
constexpr int kMissed = kGone + kChanged + kAdded;

std::string BackKey(const std::string& kind, int i) { return kind + "-" + std::to_string(i); }

bool Mentions(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

bool LiveAt(const InProcessCluster& c, uint32_t id, const std::string& key) {
  auto local = c.LocalRead(id, key);
  return local.ok() && local->found && !local->tombstone;
}

// Node 3 holds every key at "old"; then, while it is stopped, the `gone` keys are deleted, the
// `changed` ones overwritten and the `added` ones written (each acknowledged by nodes 1 and 2 and
// hinted for node 3); it stays away until every one of those hints is past the grace and a
// hinting node marks it. Node 3 is stopped on return.
void MissWritesUntilMarked(InProcessCluster& c, Client& client) {
  for (const char* kind : {"gone", "changed", "same"}) {
    const int n = std::string(kind) == "gone" ? kGone : std::string(kind) == "same" ? kSame : 10;
    for (int i = 0; i < n; ++i) REQUIRE(client.Put(BackKey(kind, i), "old").ok());
    for (int i = 0; i < n; ++i) {
      REQUIRE(Eventually([&] { return LiveAt(c, 3, BackKey(kind, i)); }));
    }
  }
  c.StopNode(3);
  for (int i = 0; i < kGone; ++i) REQUIRE(client.Delete(BackKey("gone", i)).ok());
  for (int i = 0; i < kChanged; ++i) REQUIRE(client.Put(BackKey("changed", i), "new").ok());
  for (int i = 0; i < kAdded; ++i) REQUIRE(client.Put(BackKey("added", i), "new").ok());
  const auto last_write = std::chrono::steady_clock::now();
  // Every hint past the grace (with a margin for the HLC's physical time), so that none is
  // replayed when node 3 returns: it misses exactly these kMissed writes.
  const auto all_overdue = std::chrono::milliseconds(kBackGraceMs) + std::chrono::seconds(1);
  REQUIRE(Eventually(
      [&] {
        return std::chrono::steady_clock::now() - last_write > all_overdue &&
               (Marks(client, c, 1, 3) || Marks(client, c, 2, 3));
      },
      all_overdue + std::chrono::seconds(15)));
}

// No key deleted while node 3 was away is live anywhere; every other key has its newest value.
void CheckConverged(const InProcessCluster& c, Client& client) {
  for (int i = 0; i < kGone; ++i) {
    INFO(BackKey("gone", i));
    for (uint32_t id = 1; id <= 3; ++id) CHECK_FALSE(LiveAt(c, id, BackKey("gone", i)));
    CHECK(client.Get(BackKey("gone", i), Consistency::kAll).status().IsNotFound());
  }
  for (const char* kind : {"changed", "added"}) {
    for (int i = 0; i < 10; ++i) {
      auto local = c.LocalRead(3, BackKey(kind, i));
      INFO(BackKey(kind, i) << ": " << local.status().ToString());
      REQUIRE(local.ok());
      CHECK(local->value == "new");
      CHECK(*client.Get(BackKey(kind, i), Consistency::kAll) == "new");
    }
  }
  for (int i = 0; i < kSame; ++i)
    CHECK(*client.Get(BackKey("same", i), Consistency::kAll) == "old");
}

}  // namespace

TEST_CASE("needs repair: `repair` brings the node back, streaming only what it missed",
          "[replication][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kBackGraceMs);
  // Only the command repairs, so the node's state before it is observable.
  cluster.TuneNodes([](uint32_t, NodeOptions* o) { o->background_repair = false; });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  MissWritesUntilMarked(cluster, *client);
  REQUIRE(cluster.RestartNode(3).ok());

  // Restarted without --rebuild: it needs repair, and is out of reads and stream sources.
  REQUIRE(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  auto refused = cluster.LocalRead(3, BackKey("gone", 0));
  INFO(refused.status().ToString());
  CHECK(refused.status().code() == Status::Code::kFailedPrecondition);
  CHECK(Mentions(refused.status().message(), "shardkv repair --node 3"));
  net::Request scan;
  scan.body = net::StreamScanRequest{7, 0, UINT64_MAX, "", 100, 1 << 20, {}, 0};
  auto reply = cluster.Call(3, std::move(scan));
  REQUIRE(reply.ok());
  CHECK(reply->status().code() == Status::Code::kFailedPrecondition);
  auto all = client->Get(BackKey("same", 0), Consistency::kAll);
  CHECK(Mentions(all.status().message(), "needs repair"));

  auto admin = shardkv::testing::AdminFor(cluster);
  auto repaired = admin->Repair({});
  REQUIRE(repaired.ok());
  for (const std::string& f : repaired->failures) UNSCOPED_INFO(f);
  CHECK(repaired->complete());
  CHECK(repaired->still_need_repair.empty());
  // Exactly the missed writes went to node 3, and nothing of node 3's went anywhere: its old
  // values lose to the tombstones and newer values the others hold.
  CHECK(repaired->keys_streamed == static_cast<uint64_t>(kMissed));
  REQUIRE(repaired->streamed.size() == 1);
  CHECK(repaired->streamed[0].node_id == 3u);
  CHECK(repaired->streamed[0].keys == static_cast<uint64_t>(kMissed));
  CHECK(CounterOf(*client, cluster, 3, std::string(stats::repair_keys_in)) == kMissed);

  // It serves again, and the nodes that marked it retired their marks.
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 0);
  CHECK(CounterOf(*client, cluster, 3, "rebuilt_at_ms") > 0);
  CHECK(
      Eventually([&] { return !Marks(*client, cluster, 1, 3) && !Marks(*client, cluster, 2, 3); }));
  CheckConverged(cluster, *client);
  // The clearing is persisted: a restart does not mark it again.
  cluster.StopNode(3);
  REQUIRE(cluster.RestartNode(3).ok());
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 0);
  CHECK(LiveAt(cluster, 3, BackKey("same", 0)));
  // And a second repair finds nothing left to stream.
  auto again = admin->Repair({});
  REQUIRE(again.ok());
  CHECK(again->complete());
  CHECK(again->keys_streamed == 0);
}

TEST_CASE("needs repair: background repair brings the node back with no command run",
          "[replication][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(PlacementMode::kJump), kBackGraceMs);
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  MissWritesUntilMarked(cluster, *client);
  REQUIRE(cluster.RestartNode(3).ok());
  // Its background steps compare every range it holds (the period is 1 s for this grace).
  REQUIRE(Eventually([&] { return CounterOf(*client, cluster, 3, "needs_repair") == 0; },
                     std::chrono::seconds(20)));
  CHECK(CounterOf(*client, cluster, 3, std::string(stats::repair_keys_in)) == kMissed);
  CHECK(
      Eventually([&] { return !Marks(*client, cluster, 1, 3) && !Marks(*client, cluster, 2, 3); }));
  CheckConverged(cluster, *client);
}

TEST_CASE("needs repair: repair refuses ranges whose tombstones may be purged, and says rebuild",
          "[replication][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(PlacementMode::kJump), kBackGraceMs);
  bool upgraded = false;
  cluster.TuneNodes([&](uint32_t id, NodeOptions* o) {
    o->background_repair = false;
    // Node 1 collects tombstones by the grace alone, as an earlier release does, until it is
    // "upgraded" (restarted with the GC rule on).
    if (id == 1) o->gc_waits_for_repair_for_test = upgraded;
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  MissWritesUntilMarked(cluster, *client);
  REQUIRE(cluster.RestartNode(3).ok());
  REQUIRE(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  // Node 1 drops its hints for node 3 (expired) and purges the tombstones node 3 lacks.
  REQUIRE(Eventually([&] { return CounterOf(*client, cluster, 1, "hints_pending") == 0; }));
  REQUIRE(Eventually(
      [&] {
        auto dropped = cluster.node(1)->Compact();
        return dropped.ok() && *dropped > 0;
      },
      std::chrono::seconds(30)));

  auto admin = shardkv::testing::AdminFor(cluster);
  auto refused = admin->Repair({});
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->complete());
  CHECK(refused->ranges_failed > 0);
  REQUIRE(refused->still_need_repair == std::vector<uint32_t>{3});
  bool says_rebuild = false;
  for (const std::string& f : refused->failures) {
    UNSCOPED_INFO(f);
    says_rebuild = says_rebuild || (Mentions(f, "node 1 collects tombstones by the grace alone") &&
                                    Mentions(f, "shardkv cluster start-node 3 --rebuild"));
  }
  CHECK(says_rebuild);
  // Node 3 compared nothing (every range holds node 1), so nothing of its went anywhere and
  // nothing came to it (nodes 1 and 2 may still give node 1 the tombstones it purged); it still
  // refuses reads.
  CHECK(CounterOf(*client, cluster, 3, std::string(stats::repair_keys_out)) == 0);
  CHECK(CounterOf(*client, cluster, 3, std::string(stats::repair_keys_in)) == 0);
  for (const RepairStreamed& n : refused->streamed) CHECK(n.node_id != 3u);
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  CHECK(cluster.LocalRead(3, BackKey("same", 0)).status().code() ==
        Status::Code::kFailedPrecondition);
  for (int i = 0; i < kGone; ++i) {
    INFO(BackKey("gone", i));
    CHECK_FALSE(LiveAt(cluster, 1, BackKey("gone", i)));
    CHECK_FALSE(LiveAt(cluster, 2, BackKey("gone", i)));
    CHECK(client->Get(BackKey("gone", i)).status().IsNotFound());
  }

  // Node 1 now waits for repairs (as after an upgrade), but what it collected before stays
  // gone: it says since when it waits, and node 3 synced none of its ranges since, so the
  // ranges are still refused.
  cluster.StopNode(1);
  upgraded = true;
  REQUIRE(cluster.RestartNode(1).ok());
  REQUIRE(CounterOf(*client, cluster, 1, std::string(stats::gc_waits_for_repair)) == 1);
  CHECK(CounterOf(*client, cluster, 1, std::string(stats::gc_waits_since_ms)) > 0);
  CHECK(CounterOf(*client, cluster, 2, std::string(stats::gc_waits_since_ms)) == 0);
  auto still = admin->Repair({});
  REQUIRE(still.ok());
  CHECK_FALSE(still->complete());
  CHECK(still->still_need_repair == std::vector<uint32_t>{3});
  bool says_since = false;
  for (const std::string& f : still->failures) {
    UNSCOPED_INFO(f);
    says_since =
        says_since || (Mentions(f, "node 1 collected tombstones by the grace alone until") &&
                       Mentions(f, "shardkv cluster start-node 3 --rebuild"));
  }
  CHECK(says_since);
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  for (int i = 0; i < kGone; ++i) {
    INFO(BackKey("gone", i));
    for (uint32_t id : {1u, 2u}) CHECK_FALSE(LiveAt(cluster, id, BackKey("gone", i)));
  }
}

// Per range: with 4 nodes at RF 3, node 4's ranges that node 1 (GC by the grace alone) also holds
// are refused, and the others are repaired, bringing node 4 exactly the deletes it missed there.
TEST_CASE("needs repair: repair refuses only the ranges a grace-alone replica holds",
          "[replication][repair]") {
  const ClusterParams params{PlacementMode::kJump, 160, 8, 3, 2, 2};
  InProcessCluster cluster(4, params, kBackGraceMs);
  cluster.TuneNodes([](uint32_t id, NodeOptions* o) {
    o->background_repair = false;
    if (id == 1) o->gc_waits_for_repair_for_test = false;
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  const ClusterMap& map = cluster.map();
  auto holds = [&](const std::string& key, uint32_t id) {
    const auto replicas = map.Replicas(map.TokenOf(key));
    return std::find(replicas.begin(), replicas.end(), id) != replicas.end();
  };
  std::vector<std::string> keys;
  for (int i = 0; i < 80; ++i) {
    const std::string key = BackKey("four", i);
    REQUIRE(client->Put(key, "old").ok());
    if (holds(key, 4)) keys.push_back(key);
  }
  for (const std::string& key : keys) REQUIRE(Eventually([&] { return LiveAt(cluster, 4, key); }));
  cluster.StopNode(4);
  int expected_in = 0;  // deletes node 4 misses in ranges node 1 does not hold
  for (const std::string& key : keys) {
    REQUIRE(client->Delete(key).ok());
    if (!holds(key, 1)) ++expected_in;
  }
  REQUIRE(expected_in > 0);
  REQUIRE(expected_in < static_cast<int>(keys.size()));
  const auto last_write = std::chrono::steady_clock::now();
  const auto all_overdue = std::chrono::milliseconds(kBackGraceMs) + std::chrono::seconds(1);
  REQUIRE(Eventually(
      [&] {
        if (std::chrono::steady_clock::now() - last_write <= all_overdue) return false;
        for (uint32_t id = 1; id <= 3; ++id) {
          if (Marks(*client, cluster, id, 4)) return true;
        }
        return false;
      },
      all_overdue + std::chrono::seconds(15)));
  REQUIRE(cluster.RestartNode(4).ok());
  REQUIRE(CounterOf(*client, cluster, 4, "needs_repair") == 1);

  auto admin = shardkv::testing::AdminFor(cluster);
  auto repaired = admin->Repair({});
  REQUIRE(repaired.ok());
  CHECK_FALSE(repaired->complete());
  CHECK(repaired->still_need_repair == std::vector<uint32_t>{4});
  // Node 4 pulled the deletes of the ranges it could compare, and only those.
  CHECK(CounterOf(*client, cluster, 4, std::string(stats::repair_keys_in)) == expected_in);
  CHECK(CounterOf(*client, cluster, 4, std::string(stats::repair_keys_out)) == 0);
  CHECK(CounterOf(*client, cluster, 4, "needs_repair") == 1);
  for (const std::string& key : keys) {
    INFO(key);
    for (uint32_t id = 1; id <= 3; ++id) CHECK_FALSE(LiveAt(cluster, id, key));
  }
}
