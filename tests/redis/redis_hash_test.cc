// Hashes through the Redis listener of real in-process nodes (design.md "Hashes"): Redis's
// replies to the hash commands, WRONGTYPE both ways, TYPE, resets by SET and DEL, and concurrent
// HSETs of different fields through every node all surviving, across a node's restart.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/hlc.h"
#include "redis/raw_resp_client.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using shardkv::redis::testing::RawClient;
using shardkv::testing::InProcessCluster;

namespace {

void HashNodesWithRedis(InProcessCluster& c) {
  c.TuneNodes([](uint32_t, shardkv::NodeOptions* o) { o->redis_listen = "127.0.0.1:0"; });
}

uint16_t HashRedisPort(const InProcessCluster& c, uint32_t id) {
  std::ifstream in(c.DataDir(id) + "/redis_port");
  int port = 0;
  in >> port;
  REQUIRE(port > 0);
  return static_cast<uint16_t>(port);
}

// An array reply's elements (each a bulk, integer or nil, with CRLFs); the header must be *n.
std::vector<std::string> ArrayOf(RawClient& client, const std::vector<std::string>& args) {
  const std::string header = client.Call(args);
  REQUIRE(header.size() >= 4);
  REQUIRE(header[0] == '*');
  const int n = std::stoi(header.substr(1));
  std::vector<std::string> out;
  for (int i = 0; i < n && i < 100000; ++i) out.push_back(client.ReadReply());
  return out;
}

std::string Bulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

constexpr char kWrongType[] =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

}  // namespace

TEST_CASE("redis hashes: HSET, HGET, HDEL, HGETALL and the rest as Redis answers them",
          "[redis][hash]") {
  InProcessCluster c(3, shardkv::testing::ThreeReplicas());
  HashNodesWithRedis(c);
  REQUIRE(c.Start().ok());
  RawClient one(HashRedisPort(c, 1));
  RawClient two(HashRedisPort(c, 2));

  CHECK(one.Call({"HSET", "user", "name", "ann", "age", "41"}) == ":2\r\n");
  CHECK(two.Call({"HSET", "user", "age", "42", "city", "oslo"}) == ":1\r\n");  // age existed
  CHECK(one.Call({"HGET", "user", "age"}) == Bulk("42"));
  CHECK(one.Call({"HGET", "user", "none"}) == "$-1\r\n");
  CHECK(one.Call({"HGET", "missing", "f"}) == "$-1\r\n");
  CHECK(ArrayOf(two, {"HMGET", "user", "name", "none", "city"}) ==
        std::vector<std::string>{Bulk("ann"), "$-1\r\n", Bulk("oslo")});
  CHECK(ArrayOf(one, {"HGETALL", "user"}) == std::vector<std::string>{Bulk("age"), Bulk("42"),
                                                                      Bulk("city"), Bulk("oslo"),
                                                                      Bulk("name"), Bulk("ann")});
  CHECK(ArrayOf(one, {"HKEYS", "user"}) ==
        std::vector<std::string>{Bulk("age"), Bulk("city"), Bulk("name")});
  CHECK(ArrayOf(one, {"HVALS", "user"}) ==
        std::vector<std::string>{Bulk("42"), Bulk("oslo"), Bulk("ann")});
  CHECK(ArrayOf(one, {"HGETALL", "missing"}).empty());
  CHECK(one.Call({"HLEN", "user"}) == ":3\r\n");
  CHECK(one.Call({"HLEN", "missing"}) == ":0\r\n");
  CHECK(one.Call({"HEXISTS", "user", "city"}) == ":1\r\n");
  CHECK(one.Call({"HEXISTS", "user", "zip"}) == ":0\r\n");
  CHECK(one.Call({"HSTRLEN", "user", "city"}) == ":4\r\n");
  CHECK(one.Call({"HSETNX", "user", "city", "rome"}) == ":0\r\n");
  CHECK(one.Call({"HSETNX", "user", "zip", "0150"}) == ":1\r\n");
  CHECK(one.Call({"HGET", "user", "city"}) == Bulk("oslo"));
  CHECK(one.Call({"HMSET", "user", "zip", "0151"}) == "+OK\r\n");
  CHECK(one.Call({"HGET", "user", "zip"}) == Bulk("0151"));
  CHECK(one.Call({"HSET", "user", "f"}) == "-ERR wrong number of arguments for 'hset' command\r\n");
  // HSCAN: everything in one reply, cursor 0; MATCH filters.
  CHECK(one.Call({"HSCAN", "user", "0", "MATCH", "c*"}) == "*2\r\n");
  CHECK(one.ReadReply() == Bulk("0"));
  CHECK(one.ReadReply() == "*2\r\n");
  CHECK(one.ReadReply() == Bulk("city"));
  CHECK(one.ReadReply() == Bulk("oslo"));
  CHECK(one.Call({"HSCAN", "user", "x"}) == "-ERR invalid cursor\r\n");

  // The type, and the other commands' view of it.
  CHECK(one.Call({"TYPE", "user"}) == "+hash\r\n");
  CHECK(one.Call({"EXISTS", "user"}) == ":1\r\n");
  CHECK(one.Call({"GET", "user"}) == kWrongType);
  CHECK(one.Call({"STRLEN", "user"}) == kWrongType);
  CHECK(one.Call({"INCR", "user"}) == kWrongType);
  CHECK(ArrayOf(one, {"MGET", "user"}) == std::vector<std::string>{"$-1\r\n"});
  CHECK(one.Call({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(one.Call({"HSET", "s", "f", "v"}) == kWrongType);
  CHECK(one.Call({"HGET", "s", "f"}) == kWrongType);
  CHECK(one.Call({"HDEL", "s", "f"}) == kWrongType);
  CHECK(one.Call({"INCR", "n"}) == ":1\r\n");
  CHECK(one.Call({"HSET", "n", "f", "v"}) == kWrongType);
  CHECK(one.Call({"HINCRBY", "user", "age", "1"}).rfind("-ERR HINCRBY is refused by shardkv", 0) ==
        0);

  // HDEL counts what existed; the last field deleted deletes the key.
  CHECK(two.Call({"HDEL", "user", "zip", "none", "zip"}) == ":1\r\n");
  CHECK(two.Call({"HDEL", "user", "age", "city"}) == ":2\r\n");
  CHECK(one.Call({"HDEL", "user", "name"}) == ":1\r\n");
  CHECK(one.Call({"EXISTS", "user"}) == ":0\r\n");
  CHECK(one.Call({"TYPE", "user"}) == "+none\r\n");
  CHECK(one.Call({"HDEL", "user", "name"}) == ":0\r\n");

  // SET replaces a hash (as in Redis), DEL removes it, an expiry applies to it.
  CHECK(one.Call({"HSET", "h", "a", "1"}) == ":1\r\n");
  CHECK(two.Call({"SET", "h", "plain"}) == "+OK\r\n");
  CHECK(one.Call({"GET", "h"}) == Bulk("plain"));
  CHECK(one.Call({"DEL", "h"}) == ":1\r\n");
  CHECK(one.Call({"HSET", "h", "b", "2"}) == ":1\r\n");
  CHECK(one.Call({"TYPE", "h"}) == "+hash\r\n");
  CHECK(one.Call({"DEL", "h"}) == ":1\r\n");
  CHECK(one.Call({"HLEN", "h"}) == ":0\r\n");
  CHECK(one.Call({"HSET", "t", "a", "1"}) == ":1\r\n");
  CHECK(one.Call({"PEXPIRE", "t", "150"}) == ":1\r\n");
  CHECK(shardkv::testing::PollUntil(
      [&] {
        return one.Call({"EXISTS", "t"}) == ":0\r\n";
      },
      std::chrono::seconds(10)));
  CHECK(one.Call({"HSET", "t", "b", "2"}) == ":1\r\n");  // a new hash, without the expiry
  CHECK(ArrayOf(one, {"HKEYS", "t"}) == std::vector<std::string>{Bulk("b")});
  CHECK(one.Call({"PTTL", "t"}) == ":-1\r\n");

  // The native client's calls are the same operations.
  auto client = c.Connect();
  REQUIRE(client.ok());
  auto added = (*client)->HSet("native", {{"x", "1"}, {"y", "2"}});
  REQUIRE(added.ok());
  CHECK(*added == 2);
  CHECK(two.Call({"HGET", "native", "y"}) == Bulk("2"));
  auto all = (*client)->HGetAll("native");
  REQUIRE(all.ok());
  CHECK(*all == std::map<std::string, std::string>{{"x", "1"}, {"y", "2"}});
  auto removed = (*client)->HDel("native", {"x"});
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK((*client)->HGetAll("nothing").status().IsNotFound());
  CHECK((*client)->Get("native").status().reason() == shardkv::Status::Reason::kWrongType);
  auto hash_ttl = (*client)->Ttl("native");  // the key-level commands work on a hash
  REQUIRE(hash_ttl.ok());
  CHECK_FALSE(hash_ttl->has_value());
  const auto wrong = (*client)->HSet("s", {{"f", "v"}});
  CHECK(wrong.status().reason() == shardkv::Status::Reason::kWrongType);
}

TEST_CASE("redis hashes: concurrent HSETs of different fields through every node all survive",
          "[redis][hash]") {
  InProcessCluster c(3, shardkv::testing::ThreeReplicas());
  HashNodesWithRedis(c);
  REQUIRE(c.Start().ok());
  // Three clients, one per node, each setting fields of its own in the same hash at once.
  auto run = [&](uint32_t node, int from, int to, std::vector<int>* acked) {
    RawClient client(HashRedisPort(c, node));
    for (int i = from; i < to; ++i) {
      if (client.Call({"HSET", "shared", "f" + std::to_string(i), std::to_string(i)}) == ":1\r\n") {
        acked->push_back(i);
      }
    }
  };
  std::vector<int> acked[3];
  {
    std::vector<std::thread> threads;
    for (uint32_t n = 1; n <= 3; ++n) {
      threads.emplace_back(run, n, static_cast<int>(n) * 1000, static_cast<int>(n) * 1000 + 60,
                           &acked[n - 1]);
    }
    for (auto& t : threads) t.join();
  }
  // Node 3 stops; fields set through the others meanwhile reach it after its restart.
  c.StopNode(3);
  std::thread late(run, 1, 5000, 5030, &acked[0]);
  run(2, 6000, 6030, &acked[1]);
  late.join();
  REQUIRE(c.RestartNode(3).ok());
  size_t total = 0;
  for (const auto& a : acked) total += a.size();
  CHECK(total == 240);  // nothing failed here: every HSET was acknowledged
  for (uint32_t n = 1; n <= 3; ++n) {
    RawClient client(HashRedisPort(c, n));
    CHECK(client.Call({"SHARDKV", "CONSISTENCY", "all"}) == "+OK\r\n");
    CHECK(client.Call({"HLEN", "shared"}) == ":" + std::to_string(total) + "\r\n");
    for (const auto& a : acked) {
      for (int i : a) {
        INFO("node " << n << " field f" << i);
        CHECK(client.Call({"HGET", "shared", "f" + std::to_string(i)}) == Bulk(std::to_string(i)));
      }
    }
  }
}

TEST_CASE("redis hashes: an HDEL of the last field keeps an HSET of another field it did not see",
          "[redis][hash]") {
  InProcessCluster c(3, shardkv::testing::ThreeReplicas());
  REQUIRE(c.Start().ok());
  auto client = shardkv::testing::MustConnect(c);
  REQUIRE(client->HSet("h", {{"a", "1"}}, false, shardkv::Consistency::kAll).ok());
  // Node 3 alone holds an HSET of field b (as a coordinator whose write reached only it would
  // leave it), older than the HDEL below, and stays down while the HDEL of a runs through the
  // others: the HDEL's read shows a alone, the last field.
  c.StopNode(3);
  {
    auto s = shardkv::storage::Storage::Open(c.DataDir(3) + "/db", {});
    REQUIRE(s.ok());
    const uint64_t token = c.map().TokenOf("h");
    auto env = (*s)->GetEnvelope(token, "h");
    REQUIRE(env.ok());
    using shardkv::common::HlcClock;
    env->hash.push_back({"b", {HlcClock::Make(HlcClock::WallClockMs() - 1, 0), 3}, false, "2"});
    REQUIRE((*s)->DebugWriteRawForTest(token, "h", &*env).ok());
    REQUIRE((*s)->Close().ok());
  }
  auto removed = client->HDel("h", {"a"});
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK(client->HGetAll("h").status().IsNotFound());  // the key went with its last field
  REQUIRE(c.RestartNode(3).ok());
  // Field tombstones, not a key tombstone: b, which the HDEL never saw, survives it (a key
  // tombstone newer than b's version would have reset it).
  auto all = client->HGetAll("h", shardkv::Consistency::kAll);
  REQUIRE(all.ok());
  CHECK(*all == std::map<std::string, std::string>{{"b", "2"}});
}
