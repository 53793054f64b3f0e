// The tombstone GC rule of anti-entropy (design.md "Tombstones and GC", rebalance/gc_horizon.h):
// a tombstone is collected only once it is older than the grace AND every replica of its range
// was repaired since it was written. A replica that stays down blocks GC of its ranges (and the
// stats say so); its return and a repair, or its removal, unblock it; and no repair brings a
// deleted key back, which it would if the live replicas had collected the tombstones of deletes
// the down replica missed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "rebalance_test_util.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "shardkv/stats.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"
#include "testing/needs_repair.h"

using namespace shardkv;
using rebalance_test::Contents;
using rebalance_test::ReadAll;
using shardkv::testing::CounterOf;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;

namespace {

// Short, so that the test outlives it; long enough that no write of the test is late.
constexpr uint64_t kGraceMs = 3000;
constexpr int kKeys = 60;
constexpr int kDeleted = 20;  // key-0 .. key-19

// Jump shards, RF 3 (W 2, Q 2): each node drives a few of the 8 ranges.
ClusterParams Params() { return ClusterParams{PlacementMode::kJump, 160, 8, 3, 2, 2}; }

std::string Key(int i) { return "key-" + std::to_string(i); }

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Info `name` of node `id` ("" if absent or the node did not answer).
std::string InfoOf(Client& client, const InProcessCluster& c, uint32_t id, std::string_view name) {
  auto stats = client.NodeStats(c.Address(id));
  if (!stats.ok()) return "";
  auto it = stats->info.find(std::string(name));
  return it == stats->info.end() ? "" : it->second;
}

// Whether node `id` holds `key`'s tombstone (a running node, read locally).
bool HoldsTombstone(const InProcessCluster& c, uint32_t id, const std::string& key) {
  auto local = c.LocalRead(id, key);
  return local.ok() && local->found && local->tombstone;
}

// Whether node `id` holds nothing at all for `key` (the tombstone was collected).
bool HoldsNothing(const InProcessCluster& c, uint32_t id, const std::string& key) {
  return c.LocalRead(id, key).status().IsNotFound();
}

// Waits until node `id` reports GC blocked, waiting for `waiting` (the down replica).
bool ReportsBlocked(Client& client, const InProcessCluster& c, uint32_t id,
                    const std::string& waiting) {
  return Eventually(
      [&] {
        return CounterOf(client, c, id, std::string(stats::gc_blocked_ranges)) > 0 &&
               InfoOf(client, c, id, stats::gc_blocked_by) == waiting;
      },
      std::chrono::milliseconds(kGraceMs) + std::chrono::seconds(15));
}

// Past the grace of every delete made before `deleted_ms` (polled, not slept on).
void WaitPastGrace(uint64_t deleted_ms) {
  REQUIRE(Eventually([&] { return WallMs() > deleted_ms + kGraceMs + 200; },
                     std::chrono::milliseconds(kGraceMs) + std::chrono::seconds(5)));
}

}  // namespace

TEST_CASE("gc rule: a down replica blocks tombstone GC until it returns and is repaired",
          "[repair][gc]") {
  InProcessCluster c(3, Params(), kGraceMs);
  // Repairs only when the test runs one: the last complete repair is then known exactly.
  c.TuneNodes([](uint32_t, NodeOptions* o) { o->background_repair = false; });
  REQUIRE(c.Start().ok());
  auto client = testing::MustConnect(c);
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE(client->Put(Key(i), "value-" + std::to_string(i), Consistency::kAll).ok());
  }
  auto admin = testing::AdminFor(c);
  auto first = admin->Repair({});
  REQUIRE(first.ok());
  REQUIRE(first->complete());  // every range repaired, before the deletes

  // The deletes reach every replica (no hints), then node 3 loses them: it comes back as if it
  // had missed them, holding the values they deleted (a hint lost with its coordinator's disk).
  for (int i = 0; i < kDeleted; ++i) REQUIRE(client->Delete(Key(i), Consistency::kAll).ok());
  const uint64_t deleted_ms = WallMs();
  c.StopNode(3);
  {
    const Contents held = ReadAll(c, 3);
    auto s = storage::Storage::Open(c.DataDir(3) + "/db", storage::StorageOptions{});
    REQUIRE(s.ok());
    int stale = 0;
    for (const auto& [k, env] : held) {
      if (!env.tombstone) continue;
      const std::string value = "value-" + k.second.substr(4);
      storage::Envelope old{env.timestamp - 1, env.node_id, false, value};
      REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, &old).ok());
      ++stale;
    }
    REQUIRE(stale == kDeleted);
    REQUIRE((*s)->Close().ok());
  }

  // Past the grace, with node 3 down: a repair cannot complete, and the live replicas keep the
  // tombstones through compactions; each says its GC waits for node 3.
  WaitPastGrace(deleted_ms);
  auto blocked = admin->Repair({});
  REQUIRE(blocked.ok());
  CHECK_FALSE(blocked->complete());
  for (uint32_t id : {1u, 2u}) {
    INFO("node " << id);
    CHECK(ReportsBlocked(*client, c, id, "3"));
    REQUIRE(c.node(id)->Compact().ok());
    for (int i = 0; i < kDeleted; ++i) CHECK(HoldsTombstone(c, id, Key(i)));
    CHECK(CounterOf(*client, c, id, std::string(stats::gc_kept_unrepaired)) >= kDeleted);
  }

  // Node 3 returns with its stale values; a repair converges every replica, and no deleted key
  // comes back (the tombstones beat the values they deleted).
  REQUIRE(c.RestartNode(3).ok());
  auto repaired = admin->Repair({});
  REQUIRE(repaired.ok());
  CHECK(repaired->complete());
  CHECK(repaired->keys_streamed == static_cast<uint64_t>(kDeleted));
  for (int i = 0; i < kDeleted; ++i) {
    INFO(Key(i));
    for (uint32_t id = 1; id <= 3; ++id) CHECK(HoldsTombstone(c, id, Key(i)));
  }

  // Then GC proceeds on every replica: the tombstones are past the grace and older than the
  // repair, which every replica took part in.
  for (uint32_t id = 1; id <= 3; ++id) {
    INFO("node " << id);
    CHECK(CounterOf(*client, c, id, std::string(stats::gc_blocked_ranges)) == 0);
    CHECK(InfoOf(*client, c, id, stats::gc_blocked_by).empty());
    REQUIRE(c.node(id)->Compact().ok());
    for (int i = 0; i < kDeleted; ++i) CHECK(HoldsNothing(c, id, Key(i)));
  }
  // Nothing is left anywhere to bring a deleted key back.
  auto after = admin->Repair({});
  REQUIRE(after.ok());
  CHECK(after->complete());
  CHECK(after->keys_streamed == 0);
  for (int i = 0; i < kDeleted; ++i) {
    CHECK(client->Get(Key(i), Consistency::kAll).status().IsNotFound());
  }
  for (int i = kDeleted; i < kKeys; ++i) {
    CHECK(client->Get(Key(i), Consistency::kAll).ok());
  }
}

TEST_CASE("gc rule: remove-node of a replica that stays down unblocks tombstone GC",
          "[repair][gc]") {
  InProcessCluster c(4, Params(), kGraceMs);
  // Repairs only when the test runs one: none completes between the deletes and node 4's stop.
  c.TuneNodes([](uint32_t, NodeOptions* o) { o->background_repair = false; });
  REQUIRE(c.Start().ok());
  auto client = testing::MustConnect(c);
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE(client->Put(Key(i), "value-" + std::to_string(i), Consistency::kAll).ok());
  }
  // Every replica has the deletes (no hints, which would keep the tombstones of their holders
  // anyway); then node 4 goes away for good, before any repair since.
  for (int i = 0; i < kDeleted; ++i) REQUIRE(client->Delete(Key(i), Consistency::kAll).ok());
  const uint64_t deleted_ms = WallMs();
  c.StopNode(4);
  WaitPastGrace(deleted_ms);
  auto admin = testing::AdminFor(c);
  auto blocked = admin->Repair({});
  REQUIRE(blocked.ok());
  CHECK_FALSE(blocked->complete());
  const ClusterMap& map = c.map();
  for (uint32_t id = 1; id <= 3; ++id) {
    INFO("node " << id);
    CHECK(ReportsBlocked(*client, c, id, "4"));
    REQUIRE(c.node(id)->Compact().ok());
    for (int i = 0; i < kDeleted; ++i) {
      const auto replicas = map.Replicas(map.TokenOf(Key(i)));
      const bool with_4 = std::find(replicas.begin(), replicas.end(), 4u) != replicas.end();
      const bool here = std::find(replicas.begin(), replicas.end(), id) != replicas.end();
      if (with_4 && here) CHECK(HoldsTombstone(c, id, Key(i)));
    }
  }

  // `remove-node 4`: its ranges move to the remaining nodes, and the next repair compares them
  // with replica sets that do not name it, so GC goes on everywhere.
  const AdminReply begin = admin->Begin(rebalance_test::RemoveOf(4), ChangeThrottle{});
  INFO(begin.status.ToString());
  REQUIRE(begin.status.ok());
  auto done = testing::WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  auto repaired = admin->Repair({});
  REQUIRE(repaired.ok());
  CHECK(repaired->complete());
  for (uint32_t id = 1; id <= 3; ++id) {
    INFO("node " << id);
    CHECK(CounterOf(*client, c, id, std::string(stats::gc_blocked_ranges)) == 0);
    CHECK(InfoOf(*client, c, id, stats::gc_blocked_by).empty());
    REQUIRE(c.node(id)->Compact().ok());
    for (int i = 0; i < kDeleted; ++i) CHECK(HoldsNothing(c, id, Key(i)));
  }
  for (int i = 0; i < kDeleted; ++i) {
    CHECK(client->Get(Key(i), Consistency::kAll).status().IsNotFound());
  }
  for (int i = kDeleted; i < kKeys; ++i) CHECK(client->Get(Key(i), Consistency::kAll).ok());
}
