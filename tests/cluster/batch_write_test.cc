// Batches of client writes (multiPut: MSET, pipelined Redis SETs): each peer gets its copies in
// one replicaWriteBatch, every replica ends with every write, in the batch's order.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;

namespace {

int64_t BatchesServed(Client& client, const InProcessCluster& c) {
  int64_t sum = 0;
  for (uint32_t id = 1; id <= c.size(); ++id) {
    auto stats = client.NodeStats(c.Address(id));
    if (!stats.ok()) return -1;
    sum += stats->counters[std::string(stats::kOpsPrefix) + "replica_write_batch"];
  }
  return sum;
}

}  // namespace

TEST_CASE("batch writes: a multiPut reaches every replica in one frame per peer",
          "[replication][batch]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(mode));
    REQUIRE(cluster.Start().ok());
    auto client = shardkv::testing::MustConnect(cluster, 5000, 1);
    const int64_t before = BatchesServed(*client, cluster);
    std::vector<std::pair<std::string, std::string>> items;
    for (int i = 0; i < 200; ++i) items.emplace_back("b" + std::to_string(i), std::to_string(i));
    // The same key twice in one batch: the later item wins on every replica.
    items.emplace_back("twice", "first");
    items.emplace_back("twice", "second");
    for (const auto& r : client->MultiPut(items)) REQUIRE(r.ok());
    // Node 1 coordinated all of them: both other replicas got at least one batch frame.
    CHECK(BatchesServed(*client, cluster) >= before + 2);
    for (uint32_t id = 1; id <= 3; ++id) {
      for (int i = 0; i < 200; i += 7) {
        const std::string key = "b" + std::to_string(i);
        CHECK(Eventually([&] {
          auto local = cluster.LocalRead(id, key);
          return local.ok() && local->found && local->value == std::to_string(i);
        }));
      }
      CHECK(Eventually([&] {
        auto local = cluster.LocalRead(id, "twice");
        return local.ok() && local->found && local->value == "second";
      }));
    }
    CHECK(*client->Get("twice") == "second");
  }
}

TEST_CASE("batch writes: a replica down misses its batch and gets hints", "[replication][batch]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(PlacementMode::kRing));
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster, 5000, 1);
  cluster.StopNode(3);
  std::vector<std::pair<std::string, std::string>> items;
  for (int i = 0; i < 50; ++i) items.emplace_back("h" + std::to_string(i), "x");
  for (const auto& r : client->MultiPut(items)) {  // W = 2 of nodes 1 and 2
    INFO(r.status().ToString());
    REQUIRE(r.ok());
  }
  REQUIRE(cluster.RestartNode(3).ok());
  for (int i = 0; i < 50; i += 5) {
    const std::string key = "h" + std::to_string(i);
    CHECK(Eventually(
        [&] {
          auto local = cluster.LocalRead(3, key);
          return local.ok() && local->found && local->value == "x";
        },
        std::chrono::seconds(30)));
  }
}
