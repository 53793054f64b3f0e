// SCAN through the Redis listeners of an in-process 3-node RF=3 cluster (design.md "Scans"):
// a plain connection on one node sees every key once; node-scoped connections (named
// "shardkv-cluster...", as a cluster client is told to name its node connections) on every node
// see each key once in the union, with KEYS and DBSIZE per node to match; every cursor fits in
// 53 bits; and scans paused before a scale-out and resumed after it with their cursors miss
// nothing.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "rebalance/rebalance_test_util.h"
#include "redis/raw_resp_client.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::redis::testing::RawClient;
using shardkv::redis::testing::Resp;

namespace {

constexpr int kKeys = 1200;
constexpr uint64_t kSafeCursor = uint64_t{1} << 53;  // what a double holds exactly

using Seen = std::map<std::string, int>;

uint16_t RedisPortOf(const testing::InProcessCluster& c, uint32_t id) {
  std::ifstream in(c.DataDir(id) + "/redis_port");
  int port = 0;
  in >> port;
  REQUIRE(port > 0);
  return static_cast<uint16_t>(port);
}

std::string BulkValue(const std::string& reply) {
  REQUIRE(reply.rfind("$", 0) == 0);
  const size_t eol = reply.find("\r\n");
  return reply.substr(eol + 2, reply.size() - eol - 4);
}

size_t ArrayLength(const std::string& reply) {
  INFO(reply);
  REQUIRE(reply.rfind("*", 0) == 0);
  return std::stoul(reply.substr(1));
}

// One SCAN call: its keys into `seen`; the next cursor.
uint64_t ScanOnce(RawClient& c, uint64_t cursor, Seen* seen, int count = 40) {
  c.Send(Resp({"SCAN", std::to_string(cursor), "COUNT", std::to_string(count)}));
  REQUIRE(ArrayLength(c.ReadReply()) == 2);
  const uint64_t next = std::stoull(BulkValue(c.ReadReply()));
  CHECK(next < kSafeCursor);
  const size_t n = ArrayLength(c.ReadReply());
  for (size_t i = 0; i < n; ++i) ++(*seen)[BulkValue(c.ReadReply())];
  return next;
}

// SCAN from `cursor` until it comes back 0 (bounded).
void ScanToEnd(RawClient& c, uint64_t cursor, Seen* seen) {
  for (int i = 0; i < 100000; ++i) {
    cursor = ScanOnce(c, cursor, seen);
    if (cursor == 0) return;
  }
  FAIL("SCAN never returned cursor 0");
}

void Keys(RawClient& c, Seen* seen) {
  c.Send(Resp({"KEYS", "*"}));
  const size_t n = ArrayLength(c.ReadReply());
  for (size_t i = 0; i < n; ++i) ++(*seen)[BulkValue(c.ReadReply())];
}

int Missing(const Seen& seen) {
  int missing = 0;
  for (int i = 0; i < kKeys; ++i) missing += seen.count("k" + std::to_string(i)) ? 0 : 1;
  return missing;
}

int Repeated(const Seen& seen) {
  int repeated = 0;
  for (const auto& [key, n] : seen) repeated += n > 1 ? 1 : 0;
  return repeated;
}

// Polls until every listener's CLUSTER INFO reports `size` nodes: the slot tables agree.
void AwaitSlotTables(const std::vector<uint16_t>& ports, size_t size) {
  const std::string want = "cluster_size:" + std::to_string(size) + "\r\n";
  for (uint16_t port : ports) {
    RawClient c(port);
    const bool agreed = testing::PollUntil(
        [&] {
          return c.Call({"CLUSTER", "INFO"}).find(want) != std::string::npos;
        },
        std::chrono::seconds(20), std::chrono::milliseconds(50));
    INFO("port " << port << " never reported " << want);
    REQUIRE(agreed);
  }
}

std::unique_ptr<RawClient> Scoped(uint16_t port) {
  auto c = std::make_unique<RawClient>(port);
  REQUIRE(c->Call({"CLIENT", "SETNAME", "shardkv-cluster:test"}) == "+OK\r\n");
  return c;
}

struct Bed {
  explicit Bed(ClusterParams params) : cluster(3, params) {
    cluster.TuneNodes([](uint32_t, NodeOptions* o) { o->redis_listen = "127.0.0.1:0"; });
    const Status started = cluster.Start();
    INFO(started.ToString());
    REQUIRE(started.ok());
    rebalance_test::Load(cluster, kKeys);
    for (uint32_t id = 1; id <= cluster.size(); ++id) ports.push_back(RedisPortOf(cluster, id));
    AwaitSlotTables(ports, ports.size());
  }
  testing::InProcessCluster cluster;
  std::vector<uint16_t> ports;
};

}  // namespace

TEST_CASE("redis scan scope: plain SCAN sees every key once, node-scoped SCAN once in the union",
          "[redis][scan]") {
  ClusterParams params;  // RF 3 over 3 nodes: every node holds every key
  params.mode = GENERATE(PlacementMode::kRing, PlacementMode::kJump);
  Bed bed(params);

  // A plain connection on any node: the whole cluster, each key once.
  for (uint16_t port : bed.ports) {
    RawClient plain(port);
    Seen seen;
    ScanToEnd(plain, 0, &seen);
    CHECK(Missing(seen) == 0);
    CHECK(Repeated(seen) == 0);
    CHECK(seen.size() == static_cast<size_t>(kKeys));
  }

  // Node-scoped connections on every node: each key once over all of them, each node a share.
  Seen all, keys;
  for (uint16_t port : bed.ports) {
    auto scoped = Scoped(port);
    Seen mine;
    ScanToEnd(*scoped, 0, &mine);
    CHECK(mine.size() > kKeys / 6);
    CHECK(mine.size() < kKeys / 2);
    for (const auto& [k, n] : mine) all[k] += n;
    Keys(*scoped, &keys);
  }
  CHECK(Missing(all) == 0);
  CHECK(Repeated(all) == 0);
  CHECK(all.size() == static_cast<size_t>(kKeys));
  // KEYS as SCAN: per node on a node-scoped connection, the whole cluster on a plain one.
  CHECK(keys == all);
  Seen plain_keys;
  RawClient plain(bed.ports[0]);
  Keys(plain, &plain_keys);
  CHECK(plain_keys.size() == static_cast<size_t>(kKeys));

  // DBSIZE: the cluster on a plain connection; per node on a node-scoped one, adding up to the
  // cluster's count (the members' stats converge and are cached for a second: polled).
  auto dbsize = [](RawClient& c) { return std::stol(c.Call({"DBSIZE"}).substr(1)); };
  std::vector<std::unique_ptr<RawClient>> scoped;
  for (uint16_t port : bed.ports) scoped.push_back(Scoped(port));
  long sum = 0;
  const bool summed = testing::PollUntil(
      [&] {
        sum = 0;
        for (auto& c : scoped) sum += dbsize(*c);
        return sum == kKeys && dbsize(plain) == kKeys;
      },
      std::chrono::seconds(20), std::chrono::milliseconds(50));
  INFO("node-scoped DBSIZE summed " << sum);
  CHECK(summed);
  // RESET clears the name, and with it the scope.
  REQUIRE(scoped[0]->Call({"RESET"}) == "+RESET\r\n");
  CHECK(dbsize(*scoped[0]) == kKeys);
}

TEST_CASE("redis scan scope: cursors paused before a scale-out resume after it, nothing missed",
          "[redis][scan]") {
  Bed bed(ClusterParams{});
  // Three node-scoped scans and a plain one, a few calls each, then paused.
  std::vector<std::unique_ptr<RawClient>> scoped;
  std::vector<uint64_t> cursors;
  Seen all, plain_seen;
  for (uint16_t port : bed.ports) {
    scoped.push_back(Scoped(port));
    uint64_t cursor = 0;
    for (int i = 0; i < 3; ++i) cursor = ScanOnce(*scoped.back(), cursor, &all);
    REQUIRE(cursor != 0);
    cursors.push_back(cursor);
  }
  RawClient plain(bed.ports[1]);
  uint64_t plain_cursor = 0;
  for (int i = 0; i < 5; ++i) plain_cursor = ScanOnce(plain, plain_cursor, &plain_seen);
  REQUIRE(plain_cursor != 0);

  auto added = bed.cluster.AddStandaloneNode();
  REQUIRE(added.ok());
  auto admin = testing::AdminFor(bed.cluster);
  const AdminReply begun =
      admin->Begin(rebalance_test::AddOf(bed.cluster, *added), rebalance_test::RateMb(0));
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  auto done = testing::WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  bed.ports.push_back(RedisPortOf(bed.cluster, *added));
  AwaitSlotTables(bed.ports, 4);

  // Each resumed scan keeps the range it began with (its cursor carries the end), so the three
  // ranges still tile the slots although the slot table now has four nodes.
  for (size_t i = 0; i < scoped.size(); ++i) ScanToEnd(*scoped[i], cursors[i], &all);
  CHECK(Missing(all) == 0);
  ScanToEnd(plain, plain_cursor, &plain_seen);
  CHECK(Missing(plain_seen) == 0);

  // A new scan over the four nodes: each key once again.
  Seen fresh;
  for (uint16_t port : bed.ports) ScanToEnd(*Scoped(port), 0, &fresh);
  CHECK(Missing(fresh) == 0);
  CHECK(Repeated(fresh) == 0);
}
