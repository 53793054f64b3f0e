// A node whose storage fails (an I/O error injected through its RocksDB file system, in
// process: NodeOptions::storage_fault_injection_for_test) says so in stats, /readyz and its
// metrics, refuses to coordinate writes with Unavailable (so a client moves to another node: a
// cluster of 3 keeps taking every write), and recovers by itself, without a restart, once the
// error clears.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "metrics/http_get.h"
#include "net/messages.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::HttpGet;
using shardkv::testing::SampleValue;

namespace {

// Node `id`'s own stats (Client::NodeStats asks that node only).
NodeStatsSnapshot StatsOf(Client& client, const testing::InProcessCluster& c, uint32_t id) {
  auto stats = client.NodeStats(c.Address(id));
  INFO(stats.status().ToString());
  REQUIRE(stats.ok());
  return *stats;
}

// A put sent to node `id` itself, which coordinates it.
Status PutVia(const testing::InProcessCluster& c, uint32_t id, const ClusterMap& map,
              const std::string& key) {
  net::Request request;
  request.epoch = map.epoch();
  request.cluster_id = map.cluster_id();
  request.body = net::PutRequest{map.TokenOf(key), key, "v"};
  auto reply = c.Call(id, std::move(request));
  if (!reply.ok()) return reply.status();
  return reply->status();
}

}  // namespace

TEST_CASE("node: a node whose storage fails says so, coordinates no writes, and recovers",
          "[node][health]") {
  auto fail = std::make_shared<std::atomic<bool>>(false);
  testing::InProcessCluster c(3, ClusterParams{});
  c.TuneNodes([fail](uint32_t id, NodeOptions* o) {
    if (id != 3) return;
    o->metrics_listen = "127.0.0.1:0";
    o->storage_fault_injection_for_test = [fail](const std::string& file) {
      return fail->load() ? Status::IOError("injected: Read-only file system (" + file + ")")
                          : Status::OK();
    };
  });
  REQUIRE(c.Start().ok());
  auto connected = c.Connect();
  REQUIRE(connected.ok());
  Client& client = **connected;
  const ClusterMap& map = c.map();
  const uint16_t metrics_port = c.node(3)->metrics_port();
  REQUIRE(metrics_port != 0);
  REQUIRE(PutVia(c, 3, map, "before").ok());
  CHECK(HttpGet(metrics_port, "/readyz").status == 200);
  CHECK(StatsOf(client, c, 3).gauges.at(std::string(stats::storage_failing)) == 0);

  fail->store(true);
  // The first write that reaches its storage (as a coordinator or as a replica) finds the error.
  REQUIRE(testing::PollUntil(
      [&] {
        (void)PutVia(c, 3, map, "probe");
        return StatsOf(client, c, 3).gauges.at(std::string(stats::storage_failing)) == 1;
      },
      std::chrono::seconds(10)));
  // Stats answer on the sick node, with the error.
  NodeStatsSnapshot sick = StatsOf(client, c, 3);
  CHECK(sick.gauges.at(std::string(stats::disk_full)) == 0);
  CHECK(sick.counters.at(std::string(stats::storage_failures)) == 1);
  CHECK(sick.counters.at(std::string(stats::storage_io_errors)) >= 1);
  REQUIRE(sick.info.count(std::string(stats::storage_error)) == 1);
  CHECK(sick.info.at(std::string(stats::storage_error)).find("injected: Read-only file system") !=
        std::string::npos);
  // A write it would coordinate: Unavailable, the code a client moves to another node on.
  Status refused = PutVia(c, 3, map, "refused");
  INFO(refused.ToString());
  CHECK(refused.code() == Status::Code::kUnavailable);
  CHECK(refused.message().find("node 3 coordinates no writes while its storage fails") == 0);
  // Not ready, with the reason; the metrics say it too.
  auto ready = HttpGet(metrics_port, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("node 3's storage fails") != std::string::npos);
  CHECK(ready.body.find("injected: Read-only file system") != std::string::npos);
  auto scrape = HttpGet(metrics_port, "/metrics");
  REQUIRE(scrape.status == 200);
  CHECK(SampleValue(scrape.body, "shardkv_storage_failing") == 1);
  CHECK(SampleValue(scrape.body, "shardkv_storage_failures_total") == 1);
  CHECK(SampleValue(scrape.body, "shardkv_ready") == 0);
  // The cluster keeps taking every write through the client (node 3 holds a replica of every
  // key with 3 replicas, and coordinates none of them).
  for (int i = 0; i < 30; ++i) {
    Status put = client.Put("during" + std::to_string(i), "v").status();
    INFO(put.ToString());
    REQUIRE(put.ok());
  }

  // The error clears: the node recovers by itself, no restart.
  fail->store(false);
  REQUIRE(testing::PollUntil(
      [&] { return StatsOf(client, c, 3).gauges.at(std::string(stats::storage_failing)) == 0; },
      std::chrono::seconds(20)));
  CHECK(StatsOf(client, c, 3).info.count(std::string(stats::storage_error)) == 0);
  CHECK(HttpGet(metrics_port, "/readyz").status == 200);
  Status after = PutVia(c, 3, map, "after");
  INFO(after.ToString());
  CHECK(after.ok());
  for (int i = 0; i < 30; ++i) {
    auto got = client.Get("during" + std::to_string(i));
    INFO(got.status().ToString());
    CHECK(got.ok());
  }
}
