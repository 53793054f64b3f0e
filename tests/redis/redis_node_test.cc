// The Redis listener of a real in-process node: DBSIZE and INFO keyspace count live keys (0 right
// after FLUSHALL and once every key has expired, the same after a restart), and the listener's
// connections are their own metric, apart from the shardkv protocol's; the commands run the
// node's client operations with their guards and stats (design.md "Operation table").
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "metrics/http_get.h"
#include "redis/raw_resp_client.h"
#include "shardkv/admin.h"
#include "shardkv/node.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::redis::testing::RawClient;
using shardkv::redis::testing::Resp;
using shardkv::testing::HttpGet;
using shardkv::testing::SampleValue;
using shardkv::testing::TempDir;

namespace {

NodeOptions RedisNodeOptions(const TempDir& dir) {
  NodeOptions o;
  o.data_dir = dir.Sub("node");
  o.redis_listen = "127.0.0.1:0";
  o.redis_allow_flush = true;
  o.metrics_listen = "127.0.0.1:0";
  return o;
}

uint16_t RedisPort(const TempDir& dir) {
  std::ifstream in(dir.Sub("node/redis_port"));
  int port = 0;
  in >> port;
  REQUIRE(port > 0);
  return static_cast<uint16_t>(port);
}

// Polls `get` every 20 ms until it returns `want` or 10 s pass; returns the last value. DBSIZE and
// INFO answer from a view of the members' stats cached for a second.
template <typename T>
T Await(const std::function<T()>& get, const T& want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  T value = get();
  while (value != want && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling, bounded
    value = get();
  }
  return value;
}

std::string Keyspace(RawClient& c) {
  const std::string info = c.Call({"INFO", "keyspace"});
  const size_t at = info.find("db0:");
  return at == std::string::npos ? "" : info.substr(at, info.find("\r\n", at) - at);
}

}  // namespace

TEST_CASE("redis node: DBSIZE counts live keys: 0 after FLUSHALL, after expiry, after restart",
          "[redis]") {
  TempDir dir;
  auto node = shardkv::testing::MustStartFormed(RedisNodeOptions(dir));
  auto c = std::make_unique<RawClient>(RedisPort(dir));
  auto dbsize = [&] { return c->Call({"DBSIZE"}); };

  std::string pipeline;
  for (int i = 0; i < 500; ++i) pipeline += Resp({"SET", "k" + std::to_string(i), "v"});
  for (int i = 0; i < 100; ++i) pipeline += Resp({"DEL", "k" + std::to_string(i)});
  c->Send(pipeline);
  for (int i = 0; i < 600; ++i) REQUIRE(!c->ReadReply().empty());
  CHECK(Await<std::string>(dbsize, ":400\r\n") == ":400\r\n");
  CHECK(Await<std::string>([&] { return Keyspace(*c); }, "db0:keys=400,expires=0,avg_ttl=0") ==
        "db0:keys=400,expires=0,avg_ttl=0");

  // FLUSHALL writes a tombstone per key: none of them counts.
  CHECK(c->Call({"FLUSHALL"}) == "+OK\r\n");
  CHECK(Await<std::string>(dbsize, ":0\r\n") == ":0\r\n");
  CHECK(Keyspace(*c).empty());  // redis-server lists no db0 line for an empty database

  // Keys with a TTL: counted, in expires=, and gone once it passes (within a second).
  pipeline.clear();
  for (int i = 0; i < 50; ++i)
    pipeline += Resp({"SET", "t" + std::to_string(i), "v", "PX", "1500"});
  for (int i = 0; i < 10; ++i) pipeline += Resp({"SET", "p" + std::to_string(i), "v"});
  c->Send(pipeline);
  for (int i = 0; i < 60; ++i) REQUIRE(c->ReadReply() == "+OK\r\n");
  CHECK(Await<std::string>([&] { return Keyspace(*c); }, "db0:keys=60,expires=50,avg_ttl=0") ==
        "db0:keys=60,expires=50,avg_ttl=0");
  CHECK(Await<std::string>(dbsize, ":10\r\n") == ":10\r\n");
  CHECK(Keyspace(*c) == "db0:keys=10,expires=0,avg_ttl=0");

  // A restart recounts from the records.
  c.reset();
  node->Stop();
  node.reset();
  node = shardkv::testing::MustStart(RedisNodeOptions(dir));
  c = std::make_unique<RawClient>(RedisPort(dir));
  CHECK(Await<std::string>(dbsize, ":10\r\n") == ":10\r\n");
}

TEST_CASE("redis node: the listener's connections are their own metric", "[redis]") {
  TempDir dir;
  auto node = shardkv::testing::MustStartFormed(RedisNodeOptions(dir));
  const uint16_t metrics = node->metrics_port();
  auto sample = [&](const std::string& series) {
    return [metrics, series] { return SampleValue(HttpGet(metrics, "/metrics").body, series); };
  };
  // The connection that formed the cluster closes asynchronously: wait for the native count to
  // settle before comparing with it (CI once sampled it as 1, then saw 0 after the Redis load).
  const double native = Await<double>(sample("shardkv_connections"), 0);
  CHECK(native == 0);
  CHECK(sample("shardkv_redis_connections")() == 0);

  constexpr int kClients = 40;
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<RawClient>(RedisPort(dir)));
    REQUIRE(clients.back()->Call({"PING"}) == "+PONG\r\n");  // accepted and served
  }
  CHECK(Await<double>(sample("shardkv_redis_connections"), kClients) == kClients);
  CHECK(sample("shardkv_redis_connections_accepted_total")() == kClients);
  CHECK(sample("shardkv_redis_connections_rejected_total")() == 0);
  CHECK(sample("shardkv_connections")() == native);  // the shardkv protocol's own, unchanged
  clients.clear();
  CHECK(Await<double>(sample("shardkv_redis_connections"), 0) == 0);
}

TEST_CASE("redis node: commands run the node's operations, with their guards and stats",
          "[redis]") {
  TempDir dir;
  auto node = shardkv::testing::MustStart(RedisNodeOptions(dir));
  auto c = std::make_unique<RawClient>(RedisPort(dir));
  // The formed guard, on the typed path as on the native one: an unformed node serves no data.
  for (const std::vector<std::string>& cmd : std::vector<std::vector<std::string>>{
           {"GET", "k"}, {"SET", "k", "v"}, {"DEL", "k"}, {"EXPIRE", "k", "10"}, {"SCAN", "0"}}) {
    const std::string reply = c->Call(cmd);
    INFO(cmd[0] << ": " << reply);
    CHECK(reply.rfind("-CLUSTERDOWN ", 0) == 0);
    CHECK(reply.find("unformed") != std::string::npos);
  }

  shardkv::testing::MustFormAlone(*node);
  auto admin = shardkv::testing::AdminFor({node->address()});
  auto ops = [&](const std::string& op) -> int64_t {
    auto snapshot = admin->NodeStats(node->address());
    REQUIRE(snapshot.ok());
    return snapshot->counters.at(std::string(stats::kOpsPrefix) + op);
  };
  const int64_t multi_put = ops("multi_put"), multi_get = ops("multi_get"), get = ops("get"),
                expire = ops("expire"), del = ops("delete"), scan = ops("scan"), put = ops("put");
  CHECK(c->Call({"SET", "k", "v"}) == "+OK\r\n");           // one multiPut
  CHECK(c->Call({"GET", "k"}) == "$1\r\nv\r\n");            // one multiGet
  CHECK(c->Call({"SETEX", "t", "100", "v"}) == "+OK\r\n");  // one put
  CHECK(c->Call({"EXPIRE", "k", "100"}) == ":1\r\n");       // a get, then an expire
  CHECK(c->Call({"DEL", "k"}) == ":1\r\n");                 // a multiGet, then a delete
  CHECK(c->Call({"SCAN", "0"}).rfind("*2\r\n", 0) == 0);    // one or more scans
  CHECK(ops("multi_put") == multi_put + 1);
  CHECK(ops("multi_get") == multi_get + 2);
  CHECK(ops("put") == put + 1);
  CHECK(ops("get") == get + 1);
  CHECK(ops("expire") == expire + 1);
  CHECK(ops("delete") == del + 1);
  CHECK(ops("scan") >= scan + 1);
}
