// Sets through the Redis listener of real in-process nodes (design.md "Sets"): Redis's replies to
// the set commands, WRONGTYPE both ways, TYPE, resets by SET and DEL, an add winning over a
// remove that did not see it, and concurrent SADDs through every node all surviving a node's
// restart.
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <set>
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

void SetNodesWithRedis(InProcessCluster& c) {
  c.TuneNodes([](uint32_t, shardkv::NodeOptions* o) { o->redis_listen = "127.0.0.1:0"; });
}

uint16_t SetRedisPort(const InProcessCluster& c, uint32_t id) {
  std::ifstream in(c.DataDir(id) + "/redis_port");
  int port = 0;
  in >> port;
  REQUIRE(port > 0);
  return static_cast<uint16_t>(port);
}

// An array (or RESP3 set) reply's elements; the header must be *n (or ~n).
std::vector<std::string> ElementsOf(RawClient& client, const std::vector<std::string>& args) {
  const std::string header = client.Call(args);
  REQUIRE(header.size() >= 4);
  REQUIRE((header[0] == '*' || header[0] == '~'));
  const int n = std::stoi(header.substr(1));
  std::vector<std::string> out;
  for (int i = 0; i < n && i < 100000; ++i) out.push_back(client.ReadReply());
  return out;
}

std::string SetBulk(const std::string& s) {
  return "$" + std::to_string(s.size()) + "\r\n" + s + "\r\n";
}

std::vector<std::string> Bulks(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& s : items) out.push_back(SetBulk(s));
  return out;
}

constexpr char kSetWrongType[] =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";

}  // namespace

TEST_CASE("redis sets: SADD, SREM, SMEMBERS and the rest as Redis answers them", "[redis][set]") {
  InProcessCluster c(3, shardkv::testing::ThreeReplicas());
  SetNodesWithRedis(c);
  REQUIRE(c.Start().ok());
  RawClient one(SetRedisPort(c, 1));
  RawClient two(SetRedisPort(c, 2));

  CHECK(one.Call({"SADD", "tags", "red", "green", "red"}) == ":2\r\n");
  CHECK(two.Call({"SADD", "tags", "green", "blue"}) == ":1\r\n");  // green was there
  CHECK(ElementsOf(one, {"SMEMBERS", "tags"}) == Bulks({"blue", "green", "red"}));
  CHECK(ElementsOf(one, {"SMEMBERS", "missing"}).empty());
  CHECK(one.Call({"SISMEMBER", "tags", "red"}) == ":1\r\n");
  CHECK(one.Call({"SISMEMBER", "tags", "pink"}) == ":0\r\n");
  CHECK(one.Call({"SISMEMBER", "missing", "red"}) == ":0\r\n");
  CHECK(ElementsOf(two, {"SMISMEMBER", "tags", "red", "pink", "blue"}) ==
        std::vector<std::string>{":1\r\n", ":0\r\n", ":1\r\n"});
  CHECK(one.Call({"SCARD", "tags"}) == ":3\r\n");
  CHECK(one.Call({"SCARD", "missing"}) == ":0\r\n");
  // SSCAN: everything in one reply, cursor 0; MATCH filters.
  CHECK(one.Call({"SSCAN", "tags", "0", "MATCH", "*e*", "COUNT", "10"}) == "*2\r\n");
  CHECK(one.ReadReply() == SetBulk("0"));
  CHECK(one.ReadReply() == "*3\r\n");
  CHECK(one.ReadReply() == SetBulk("blue"));
  CHECK(one.ReadReply() == SetBulk("green"));
  CHECK(one.ReadReply() == SetBulk("red"));
  RawClient& scan = one;
  CHECK(scan.Call({"SSCAN", "tags", "0", "MATCH", "b*"}) == "*2\r\n");
  CHECK(scan.ReadReply() == SetBulk("0"));
  CHECK(scan.ReadReply() == "*1\r\n");
  CHECK(scan.ReadReply() == SetBulk("blue"));
  CHECK(scan.Call({"SSCAN", "tags", "x"}) == "-ERR invalid cursor\r\n");
  // SRANDMEMBER: one member, distinct ones up to a positive count, repeats for a negative one.
  const std::string one_member = scan.Call({"SRANDMEMBER", "tags"});
  CHECK((one_member == SetBulk("red") || one_member == SetBulk("green") ||
         one_member == SetBulk("blue")));
  CHECK(scan.Call({"SRANDMEMBER", "missing"}) == "$-1\r\n");
  std::vector<std::string> picked = ElementsOf(scan, {"SRANDMEMBER", "tags", "2"});
  CHECK(picked.size() == 2);
  CHECK(std::set<std::string>(picked.begin(), picked.end()).size() == 2);
  CHECK(ElementsOf(scan, {"SRANDMEMBER", "tags", "10"}).size() == 3);
  picked = ElementsOf(scan, {"SRANDMEMBER", "tags", "-7"});
  CHECK(picked.size() == 7);
  for (const std::string& p : picked) {
    CHECK((p == SetBulk("red") || p == SetBulk("green") || p == SetBulk("blue")));
  }
  CHECK(ElementsOf(scan, {"SRANDMEMBER", "tags", "0"}).empty());
  CHECK(scan.Call({"SRANDMEMBER", "tags", "x"}) ==
        "-ERR value is not an integer or out of range\r\n");
  // RESP3: SMEMBERS is a set reply.
  const std::string hello = scan.Call({"HELLO", "3"});
  REQUIRE(hello.rfind("%", 0) == 0);
  for (int i = 0; i < 2 * std::stoi(hello.substr(1)); ++i) scan.ReadReply();  // the map's pairs
  CHECK(scan.Call({"SMEMBERS", "tags"}) == "~3\r\n");
  CHECK(scan.ReadReply() == SetBulk("blue"));
  CHECK(scan.ReadReply() == SetBulk("green"));
  CHECK(scan.ReadReply() == SetBulk("red"));
  RawClient three(SetRedisPort(c, 3));

  // The type, and the other commands' view of it.
  CHECK(three.Call({"TYPE", "tags"}) == "+set\r\n");
  CHECK(three.Call({"EXISTS", "tags"}) == ":1\r\n");
  CHECK(three.Call({"GET", "tags"}) == kSetWrongType);
  CHECK(three.Call({"INCR", "tags"}) == kSetWrongType);
  CHECK(three.Call({"HSET", "tags", "f", "v"}) == kSetWrongType);
  CHECK(three.Call({"HGETALL", "tags"}) == kSetWrongType);
  CHECK(three.Call({"GETSET", "tags", "v"}) == kSetWrongType);
  CHECK(ElementsOf(three, {"MGET", "tags"}) == std::vector<std::string>{"$-1\r\n"});
  // SCAN's TYPE filter: one key of each type, each found under its own type only.
  CHECK(three.Call({"HSET", "scan:h", "f", "v"}) == ":1\r\n");
  CHECK(three.Call({"SET", "scan:s", "v"}) == "+OK\r\n");
  CHECK(three.Call({"SADD", "scan:t", "m"}) == ":1\r\n");
  const std::pair<const char*, const char*> by_type[] = {
      {"string", "scan:s"}, {"hash", "scan:h"}, {"set", "scan:t"}, {"list", nullptr}};
  for (const auto& [type, key] : by_type) {
    INFO("TYPE " << type);
    std::vector<std::string> found;
    std::string cursor = "0";
    for (int calls = 0; calls < 1000; ++calls) {
      REQUIRE(three.Call({"SCAN", cursor, "MATCH", "scan:*", "TYPE", type, "COUNT", "100"}) ==
              "*2\r\n");
      const std::string next = three.ReadReply();
      cursor = next.substr(next.find("\r\n") + 2);
      cursor = cursor.substr(0, cursor.find("\r\n"));
      const std::string header = three.ReadReply();
      for (int k = 0; k < std::stoi(header.substr(1)); ++k) found.push_back(three.ReadReply());
      if (cursor == "0") break;
    }
    CHECK(found == (key == nullptr ? std::vector<std::string>{} : Bulks({key})));
  }
  CHECK(three.Call({"SET", "s", "v"}) == "+OK\r\n");
  CHECK(three.Call({"SADD", "s", "m"}) == kSetWrongType);
  CHECK(three.Call({"SMEMBERS", "s"}) == kSetWrongType);
  CHECK(three.Call({"SREM", "s", "m"}) == kSetWrongType);
  CHECK(three.Call({"HSET", "h", "f", "v"}) == ":1\r\n");
  CHECK(three.Call({"SADD", "h", "m"}) == kSetWrongType);
  CHECK(three.Call({"SISMEMBER", "h", "m"}) == kSetWrongType);
  CHECK(three.Call({"INCR", "n"}) == ":1\r\n");
  CHECK(three.Call({"SCARD", "n"}) == kSetWrongType);

  // SREM counts what was there; the last member removed removes the key.
  CHECK(two.Call({"SREM", "tags", "red", "pink", "red"}) == ":1\r\n");
  CHECK(three.Call({"SREM", "tags", "green", "blue"}) == ":2\r\n");
  CHECK(three.Call({"EXISTS", "tags"}) == ":0\r\n");
  CHECK(three.Call({"TYPE", "tags"}) == "+none\r\n");
  CHECK(three.Call({"SREM", "tags", "red"}) == ":0\r\n");
  CHECK(three.Call({"SADD", "tags", "red"}) == ":1\r\n");  // a removed member can come back
  CHECK(ElementsOf(two, {"SMEMBERS", "tags"}) == Bulks({"red"}));

  // SET replaces a set (as in Redis), DEL removes it, an expiry applies to it.
  CHECK(three.Call({"SADD", "k", "a"}) == ":1\r\n");
  CHECK(two.Call({"SET", "k", "plain"}) == "+OK\r\n");
  CHECK(three.Call({"GET", "k"}) == SetBulk("plain"));
  CHECK(three.Call({"DEL", "k"}) == ":1\r\n");
  CHECK(three.Call({"SADD", "k", "b"}) == ":1\r\n");
  CHECK(three.Call({"TYPE", "k"}) == "+set\r\n");
  CHECK(three.Call({"DEL", "k"}) == ":1\r\n");
  CHECK(three.Call({"SCARD", "k"}) == ":0\r\n");
  CHECK(three.Call({"SADD", "t", "a"}) == ":1\r\n");
  CHECK(three.Call({"PEXPIRE", "t", "150"}) == ":1\r\n");
  CHECK(shardkv::testing::PollUntil(
      [&] {
        return three.Call({"EXISTS", "t"}) == ":0\r\n";
      },
      std::chrono::seconds(10)));
  CHECK(three.Call({"SADD", "t", "b"}) == ":1\r\n");  // a new set, without the expiry
  CHECK(ElementsOf(three, {"SMEMBERS", "t"}) == Bulks({"b"}));
  CHECK(three.Call({"PTTL", "t"}) == ":-1\r\n");

  // The native client's calls are the same operations.
  auto client = c.Connect();
  REQUIRE(client.ok());
  auto added = (*client)->SAdd("native", {"x", "y", "x"});
  REQUIRE(added.ok());
  CHECK(*added == 2);
  CHECK(two.Call({"SISMEMBER", "native", "y"}) == ":1\r\n");
  auto members = (*client)->SMembers("native");
  REQUIRE(members.ok());
  CHECK(*members == std::vector<std::string>{"x", "y"});
  auto removed = (*client)->SRem("native", {"x", "z"});
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  CHECK((*client)->SMembers("nothing").status().IsNotFound());
  CHECK((*client)->Get("native").status().reason() == shardkv::Status::Reason::kWrongType);
  CHECK((*client)->SAdd("s", {"m"}).status().reason() == shardkv::Status::Reason::kWrongType);
  CHECK((*client)->SAdd("native", {}).status().code() == shardkv::Status::Code::kInvalidArgument);
}

TEST_CASE("redis sets: an SADD that an SREM did not see survives it (add wins)", "[redis][set]") {
  InProcessCluster c(3, shardkv::testing::ThreeReplicas());
  REQUIRE(c.Start().ok());
  auto client = shardkv::testing::MustConnect(c);
  REQUIRE(client->SAdd("s", {"x", "y"}, shardkv::Consistency::kAll).ok());
  // Node 3 alone takes a second add of x (as a coordinator whose write reached only it would
  // leave it), then stays down while an SREM of x runs through the others: the SREM reads and
  // removes only the add it saw.
  c.StopNode(3);
  {
    auto s = shardkv::storage::Storage::Open(c.DataDir(3) + "/db", {});
    REQUIRE(s.ok());
    const uint64_t token = c.map().TokenOf("s");
    auto env = (*s)->GetEnvelope(token, "s");
    REQUIRE(env.ok());
    // An add time above the first add's.
    using shardkv::common::HlcClock;
    const uint64_t later = HlcClock::Make(HlcClock::WallClockMs() + 1, 0);
    env->set.push_back({"x", 3, later, 0, 0});
    std::sort(env->set.begin(), env->set.end(), shardkv::storage::SetMemberKeyLess);
    REQUIRE((*s)->DebugWriteRawForTest(token, "s", &*env).ok());
    REQUIRE((*s)->Close().ok());
  }
  auto removed = client->SRem("s", {"x"});
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  auto seen = client->SMembers("s");
  REQUIRE(seen.ok());
  CHECK(*seen == std::vector<std::string>{"y"});
  REQUIRE(c.RestartNode(3).ok());
  seen = client->SMembers("s", shardkv::Consistency::kAll);
  REQUIRE(seen.ok());
  CHECK(*seen == std::vector<std::string>{"x", "y"});
  // Read repair brought the unseen add to the others; an SREM that sees it removes it.
  removed = client->SRem("s", {"x"}, shardkv::Consistency::kAll);
  REQUIRE(removed.ok());
  CHECK(*removed == 1);
  seen = client->SMembers("s", shardkv::Consistency::kAll);
  REQUIRE(seen.ok());
  CHECK(*seen == std::vector<std::string>{"y"});
}

TEST_CASE("redis sets: concurrent SADDs through every node all survive a node's restart",
          "[redis][set]") {
  InProcessCluster c(3, shardkv::testing::ThreeReplicas());
  SetNodesWithRedis(c);
  REQUIRE(c.Start().ok());
  // Three clients, one per node, each adding members of its own to one set at once, and
  // removing every fifth again.
  auto run = [&](uint32_t node, int from, int to, std::vector<int>* kept) {
    RawClient client(SetRedisPort(c, node));
    for (int i = from; i < to; ++i) {
      if (client.Call({"SADD", "shared", "m" + std::to_string(i)}) != ":1\r\n") continue;
      if (i % 5 == 0) {
        if (client.Call({"SREM", "shared", "m" + std::to_string(i)}) != ":1\r\n")
          kept->push_back(i);
      } else {
        kept->push_back(i);
      }
    }
  };
  std::vector<int> kept[3];
  {
    std::vector<std::thread> threads;
    for (uint32_t n = 1; n <= 3; ++n) {
      threads.emplace_back(run, n, static_cast<int>(n) * 1000, static_cast<int>(n) * 1000 + 60,
                           &kept[n - 1]);
    }
    for (auto& t : threads) t.join();
  }
  // Node 3 stops; members added through the others meanwhile reach it after its restart.
  c.StopNode(3);
  std::thread late(run, 1, 5000, 5030, &kept[0]);
  run(2, 6000, 6030, &kept[1]);
  late.join();
  REQUIRE(c.RestartNode(3).ok());
  std::vector<std::string> want;
  for (const auto& k : kept) {
    for (int i : k) want.push_back("m" + std::to_string(i));
  }
  std::sort(want.begin(), want.end());
  CHECK(want.size() == 192);  // nothing failed here: 240 added, every fifth removed
  for (uint32_t n = 1; n <= 3; ++n) {
    RawClient client(SetRedisPort(c, n));
    CHECK(client.Call({"SHARDKV", "CONSISTENCY", "all"}) == "+OK\r\n");
    CHECK(client.Call({"SCARD", "shared"}) == ":" + std::to_string(want.size()) + "\r\n");
    CHECK(ElementsOf(client, {"SMEMBERS", "shared"}) == Bulks(want));
  }
}
