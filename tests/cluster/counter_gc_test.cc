// A counter deleted (or expired) long ago and counted again while one replica still holds the old
// tombstone (or expired value) the others have collected: the increments made after it must
// survive that record coming back through read repair (design.md "Counters", counts from
// nothing). In-process 3-node RF=3 cluster; the collection is done by hand on stopped nodes.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "storage/storage.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

namespace {

// What a tombstone GC on node `id` does to `keys`: their records gone from its database.
void Collect(InProcessCluster& c, uint32_t id, const std::vector<std::string>& keys) {
  c.StopNode(id);
  {
    auto s = storage::Storage::Open(c.DataDir(id) + "/db", storage::StorageOptions{});
    REQUIRE(s.ok());
    for (const std::string& k : keys) {
      REQUIRE((*s)->DebugWriteRawForTest(c.map().TokenOf(k), k, nullptr).ok());
    }
    REQUIRE((*s)->Close().ok());
  }
  REQUIRE(c.RestartNode(id).ok());
}

}  // namespace

TEST_CASE(
    "counter: increments after a collected tombstone or expired value survive it coming "
    "back",
    "[counter][ttl]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas());
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  // "gone" counted, then deleted; "lapsed" a value that expired. Every replica holds both.
  REQUIRE(client->Incr("gone", 5, Consistency::kAll).ok());
  REQUIRE(client->Delete("gone", Consistency::kAll).ok());
  REQUIRE(
      client
          ->Put("lapsed", "7", PutOptions{std::chrono::milliseconds(100), false}, Consistency::kAll)
          .ok());
  REQUIRE(shardkv::testing::Eventually(
      [&] { return client->Get("lapsed", Consistency::kAll).status().IsNotFound(); }));
  for (uint32_t id = 1; id <= 3; ++id) {
    CHECK(cluster.LocalRead(id, "gone").ok());
    CHECK(cluster.LocalRead(id, "lapsed").ok());
  }
  // Nodes 1 and 2 collect both records; node 3, stopped, keeps them.
  Collect(cluster, 1, {"gone", "lapsed"});
  Collect(cluster, 2, {"gone", "lapsed"});
  cluster.StopNode(3);
  auto counted = client->Incr("gone", 1);
  REQUIRE(counted.ok());
  CHECK(*counted == 1);
  counted = client->Incr("lapsed", 2);
  REQUIRE(counted.ok());
  CHECK(*counted == 2);
  // Node 3 comes back with the old tombstone and the expired value; reads of every replica
  // merge them in (and repair them everywhere): the increments stay.
  REQUIRE(cluster.RestartNode(3).ok());
  auto gone = client->Get("gone", Consistency::kAll);
  REQUIRE(gone.ok());
  CHECK(*gone == "1");
  auto lapsed = client->GetWithExpiry("lapsed", Consistency::kAll);
  REQUIRE(lapsed.ok());
  CHECK(lapsed->value == "2");
  CHECK(lapsed->expires_at_ms == 0);
  auto ttl = client->Ttl("lapsed", Consistency::kAll);
  REQUIRE(ttl.ok());
  CHECK_FALSE(ttl->has_value());
  // The counters go on from there, through every node; a PERSIST does not bring "7" back.
  counted = client->Incr("gone", 1, Consistency::kAll);
  REQUIRE(counted.ok());
  CHECK(*counted == 2);
  counted = client->Incr("lapsed", 1, Consistency::kAll);
  REQUIRE(counted.ok());
  CHECK(*counted == 3);
  REQUIRE(client->Persist("lapsed", Consistency::kAll).ok());
  lapsed = client->GetWithExpiry("lapsed", Consistency::kAll);
  REQUIRE(lapsed.ok());
  CHECK(lapsed->value == "3");
  // A DEL after them resets them, as always.
  REQUIRE(client->Delete("gone", Consistency::kAll).ok());
  CHECK(client->Get("gone", Consistency::kAll).status().IsNotFound());
}
