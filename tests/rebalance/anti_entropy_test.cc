// Anti-entropy (design.md "Anti-entropy"): one replica's data is damaged directly through its
// storage, as a lost file or a tool would (keys removed, values replaced by older versions,
// tombstones removed or replaced by the value they deleted); Admin::Repair then converges every
// replica, checked by reading each replica's storage directly, never through client reads (read
// repair would hide a repair that does nothing).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rebalance_test_util.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

namespace {

using rebalance_test::Contents;
using rebalance_test::ReadAll;

std::string Key(int i) { return "key-" + std::to_string(i); }

}  // namespace

TEST_CASE("anti-entropy: repair converges a damaged replica and brings no deleted key back") {
  InProcessCluster c(3, ClusterParams{});  // ring, RF 3: every node holds every key
  REQUIRE(c.Start().ok());
  auto client = c.Connect();
  REQUIRE(client.ok());
  constexpr int kKeys = 400;
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE((*client)->Put(Key(i), "value-" + std::to_string(i), Consistency::kAll).ok());
  }
  for (int i = 0; i < 40; ++i) REQUIRE((*client)->Delete(Key(i), Consistency::kAll).ok());
  client->reset();

  auto admin = testing::AdminFor(c);
  // Nothing differs yet.
  auto clean = admin->Repair({});
  REQUIRE(clean.ok());
  CHECK(clean->complete());
  CHECK(clean->ranges_compared > 0);
  CHECK(clean->ranges_differed == 0);
  CHECK(clean->keys_streamed == 0);

  // Damage node 2 through its storage while the cluster is stopped (a running node holds the
  // RocksDB lock of its database).
  for (uint32_t id = 1; id <= 3; ++id) c.StopNode(id);
  const Contents before = ReadAll(c, 1);
  REQUIRE(ReadAll(c, 2) == before);
  REQUIRE(ReadAll(c, 3) == before);
  REQUIRE(before.size() == kKeys);
  int removed = 0, aged = 0, tomb_removed = 0, tomb_replaced = 0;
  {
    auto s = storage::Storage::Open(c.DataDir(2) + "/db", storage::StorageOptions{});
    REQUIRE(s.ok());
    for (const auto& [k, env] : before) {
      const int i = std::stoi(k.second.substr(4));
      if (i < 10) {  // a tombstone removed
        REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, nullptr).ok());
        ++tomb_removed;
      } else if (i < 20) {  // a tombstone replaced by the value it deleted
        storage::Envelope old{env.timestamp - 1, env.node_id, false, "value-" + std::to_string(i)};
        REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, &old).ok());
        ++tomb_replaced;
      } else if (i >= 100 && i < 125) {  // a live key removed
        REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, nullptr).ok());
        ++removed;
      } else if (i >= 200 && i < 215) {  // a value replaced by an older version
        storage::Envelope old{env.timestamp - 1, env.node_id, false, "older"};
        REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, &old).ok());
        ++aged;
      }
    }
    REQUIRE((*s)->Close().ok());
  }
  const int damaged = removed + aged + tomb_removed + tomb_replaced;
  REQUIRE(damaged == 60);
  REQUIRE(ReadAll(c, 2).size() == static_cast<size_t>(kKeys - removed - tomb_removed));
  for (uint32_t id = 1; id <= 3; ++id) REQUIRE(c.RestartNode(id).ok());

  auto summary = admin->Repair({});
  REQUIRE(summary.ok());
  CHECK(summary->complete());
  CHECK(summary->ranges_skipped == 0);
  CHECK(summary->ranges_differed > 0);
  CHECK(summary->keys_streamed == static_cast<uint64_t>(damaged));
  REQUIRE(summary->streamed.size() == 1);
  CHECK(summary->streamed[0].node_id == 2);
  CHECK(summary->streamed[0].keys == static_cast<uint64_t>(damaged));
  CHECK(summary->tree_bytes > 0);
  WARN("repair of " << damaged << " damaged keys of " << kKeys << ": ranges "
                    << summary->ranges_compared << " compared, " << summary->ranges_differed
                    << " differed, leaves " << summary->leaves_differed << ", records read "
                    << summary->keys_fetched << ", tree bytes " << summary->tree_bytes
                    << " (clean run: " << clean->tree_bytes << ")");

  // A second repair finds nothing to do.
  auto again = admin->Repair({});
  REQUIRE(again.ok());
  CHECK(again->ranges_differed == 0);
  CHECK(again->keys_streamed == 0);

  // Every replica holds exactly what node 1 held before the damage: the deleted keys are
  // tombstones everywhere, and the older versions were overwritten.
  admin.reset();
  rebalance_test::CheckEveryNodeHolds(c, before);
}

TEST_CASE("anti-entropy: a repair of one node compares only the ranges it holds") {
  InProcessCluster c(4, ClusterParams{PlacementMode::kJump, 160, 16, 2, 1, 1});
  REQUIRE(c.Start().ok());
  auto client = c.Connect();
  REQUIRE(client.ok());
  for (int i = 0; i < 200; ++i) {
    REQUIRE((*client)->Put(Key(i), "v", Consistency::kAll).ok());
  }
  client->reset();
  auto admin = testing::AdminFor(c);
  RepairOptions one;
  one.node_id = 3;
  auto summary = admin->Repair(one);
  REQUIRE(summary.ok());
  CHECK(summary->complete());
  // One range per shard node 3 holds (jump mode does not merge shards).
  auto map = admin->NewestMap();
  REQUIRE(map.ok());
  uint64_t held = 0;
  for (uint64_t s = 0; s < 16; ++s) {
    const auto replicas = map->Replicas(s << 32);
    held += std::count(replicas.begin(), replicas.end(), 3u);
  }
  CHECK(held > 0);
  CHECK(summary->ranges_compared == held);
  CHECK(summary->keys_streamed == 0);
  RepairOptions missing;
  missing.node_id = 9;
  CHECK(admin->Repair(missing).status().code() == Status::Code::kInvalidArgument);
}

// The figures design.md quotes: tree bytes and records read for a clean cluster, one damaged key
// and 1% damaged keys, 20,000 keys in 16 jump shards (RF 3, so 1,250 keys a range).
TEST_CASE("anti-entropy: tree bytes grow with the differences not the keys") {
  InProcessCluster c(3, ClusterParams{PlacementMode::kJump, 160, 16, 3, 2, 2});
  REQUIRE(c.Start().ok());
  auto client = c.Connect();
  REQUIRE(client.ok());
  constexpr int kKeys = 20000;
  for (int i = 0; i < kKeys; ++i) REQUIRE((*client)->Put(Key(i), "v", Consistency::kAll).ok());
  client->reset();
  auto admin = testing::AdminFor(c);
  auto clean = admin->Repair({});
  REQUIRE(clean.ok());
  CHECK(clean->keys_streamed == 0);
  uint64_t damaged_tree_bytes[2] = {0, 0};
  uint64_t fetched[2] = {0, 0};
  int round = 0;
  for (int damage : {1, 200}) {
    for (uint32_t id = 1; id <= 3; ++id) c.StopNode(id);
    {
      auto s = storage::Storage::Open(c.DataDir(3) + "/db", storage::StorageOptions{});
      REQUIRE(s.ok());
      storage::ScanOptions options;
      options.max_entries = static_cast<size_t>(damage);
      auto batch = (*s)->Scan({0, UINT64_MAX}, options);
      REQUIRE(batch.ok());
      REQUIRE(batch->entries.size() == static_cast<size_t>(damage));
      for (const auto& e : batch->entries) {
        REQUIRE((*s)->DebugWriteRawForTest(e.token, e.key, nullptr).ok());
      }
      REQUIRE((*s)->Close().ok());
    }
    for (uint32_t id = 1; id <= 3; ++id) REQUIRE(c.RestartNode(id).ok());
    auto r = admin->Repair({});
    REQUIRE(r.ok());
    CHECK(r->complete());
    CHECK(r->keys_streamed == static_cast<uint64_t>(damage));
    damaged_tree_bytes[round] = r->tree_bytes;
    fetched[round] = r->keys_fetched;
    ++round;
  }
  WARN(kKeys << " keys, 16 ranges, RF 3: tree bytes clean " << clean->tree_bytes
             << "; 1 key damaged " << damaged_tree_bytes[0] << " (records read " << fetched[0]
             << "); 200 keys damaged " << damaged_tree_bytes[1] << " (records read " << fetched[1]
             << ")");
  CHECK(damaged_tree_bytes[0] > clean->tree_bytes);
}

TEST_CASE("anti-entropy: ranges a membership change moves are skipped and counted") {
  InProcessCluster c(3, ClusterParams{PlacementMode::kRing, 16, 1024, 2, 1, 1});
  REQUIRE(c.Start().ok());
  // More entries than one stream batch (2048), so the throttled change stays streaming.
  rebalance_test::Load(c, 6000, 100);
  REQUIRE(c.AddStandaloneNode().ok());
  auto admin = testing::AdminFor(c);
  const AdminReply begun = admin->Begin(rebalance_test::AddOf(c, 4), ChangeThrottle{1, 1});
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  auto r = admin->Repair({});
  REQUIRE(r.ok());
  CHECK(r->complete());
  CHECK(r->ranges_skipped > 0);
  CHECK(r->ranges_compared > 0);
  CHECK(r->keys_streamed == 0);
  // Node 4 holds no range before the change ends: a repair of it only skips.
  RepairOptions four;
  four.node_id = 4;
  auto only = admin->Repair(four);
  REQUIRE(only.ok());
  CHECK(only->ranges_compared == 0);
  CHECK(only->ranges_skipped > 0);
  REQUIRE(admin->Cancel().status.ok());
  REQUIRE(testing::WaitChange(*admin, ChangeState::kCancelled, std::chrono::seconds(60)).ok());
}

TEST_CASE("anti-entropy: a replica that is down leaves its ranges failed and named") {
  InProcessCluster c(3, ClusterParams{PlacementMode::kJump, 160, 8, 3, 2, 2});
  REQUIRE(c.Start().ok());
  auto client = c.Connect();
  REQUIRE(client.ok());
  for (int i = 0; i < 100; ++i) REQUIRE((*client)->Put(Key(i), "v", Consistency::kAll).ok());
  client->reset();
  c.StopNode(3);
  auto admin = testing::AdminFor(c);
  auto r = admin->Repair({});
  REQUIRE(r.ok());
  CHECK_FALSE(r->complete());
  // Nodes 1 and 2 compare their ranges but cannot reach node 3; node 3 compares nothing.
  CHECK(r->ranges_failed > 0);
  REQUIRE(r->failed_nodes.size() == 1);
  CHECK(r->failed_nodes[0] == 3);
  CHECK(r->keys_streamed == 0);
  // With the only node asked down, nothing could be sent: unreachable.
  RepairOptions three;
  three.node_id = 3;
  CHECK(admin->Repair(three).status().code() == Status::Code::kUnavailable);
}
