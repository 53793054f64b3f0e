// Counters through the Redis listener of real in-process nodes (design.md "Counters"): Redis's
// replies and errors, resets by SET, DEL and expiry, and concurrent increments through every
// node of a cluster adding up, across a node's restart.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redis/raw_resp_client.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using shardkv::redis::testing::RawClient;
using shardkv::testing::InProcessCluster;

namespace {

shardkv::ClusterParams CounterRing() {
  shardkv::ClusterParams p;
  p.vnodes = 16;
  return p;
}

void WithRedis(InProcessCluster& c) {
  c.TuneNodes([](uint32_t, shardkv::NodeOptions* o) { o->redis_listen = "127.0.0.1:0"; });
}

uint16_t RedisPort(const InProcessCluster& c, uint32_t id) {
  std::ifstream in(c.DataDir(id) + "/redis_port");
  int port = 0;
  in >> port;
  REQUIRE(port > 0);
  return static_cast<uint16_t>(port);
}

// The integer of an integer reply (":n\r\n"); nullopt for anything else.
std::optional<int64_t> IntegerOf(const std::string& reply) {
  if (reply.size() < 4 || reply[0] != ':') return std::nullopt;
  return std::stoll(reply.substr(1, reply.size() - 3));
}

}  // namespace

TEST_CASE(
    "redis counters: INCR, INCRBY, DECR, DECRBY as Redis answers them, reset by SET, DEL, expiry",
    "[redis][counter]") {
  InProcessCluster c(3, CounterRing());
  WithRedis(c);
  REQUIRE(c.Start().ok());
  RawClient one(RedisPort(c, 1));
  RawClient two(RedisPort(c, 2));

  CHECK(one.Call({"INCR", "n"}) == ":1\r\n");
  CHECK(one.Call({"INCRBY", "n", "10"}) == ":11\r\n");
  CHECK(one.Call({"DECR", "n"}) == ":10\r\n");
  CHECK(one.Call({"DECRBY", "n", "-5"}) == ":15\r\n");
  CHECK(two.Call({"INCR", "n"}) == ":16\r\n");  // another coordinator adds to the same counter
  CHECK(one.Call({"GET", "n"}) == "$2\r\n16\r\n");
  CHECK(two.Call({"MGET", "n", "none"}) == "*2\r\n");
  CHECK(two.ReadReply() == "$2\r\n16\r\n");
  CHECK(two.ReadReply() == "$-1\r\n");
  CHECK(one.Call({"TYPE", "n"}) == "+string\r\n");
  CHECK(one.Call({"EXISTS", "n"}) == ":1\r\n");
  CHECK(one.Call({"STRLEN", "n"}) == ":2\r\n");

  // A string holding an integer counts on from it; any other string is refused, as by Redis.
  CHECK(one.Call({"SET", "s", "41"}) == "+OK\r\n");
  CHECK(two.Call({"INCR", "s"}) == ":42\r\n");
  CHECK(one.Call({"SET", "t", "abc"}) == "+OK\r\n");
  CHECK(one.Call({"INCR", "t"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(one.Call({"SET", "t", " 1"}) == "+OK\r\n");
  CHECK(one.Call({"INCR", "t"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(one.Call({"INCRBY", "n", "1.5"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(one.Call({"GET", "t"}) == "$2\r\n 1\r\n");
  // Overflow both ways, with Redis's messages.
  CHECK(one.Call({"SET", "m", "9223372036854775806"}) == "+OK\r\n");
  CHECK(one.Call({"INCR", "m"}) == ":9223372036854775807\r\n");
  CHECK(two.Call({"INCR", "m"}) == "-ERR increment or decrement would overflow\r\n");
  CHECK(one.Call({"GET", "m"}) == "$19\r\n9223372036854775807\r\n");
  CHECK(one.Call({"DECRBY", "x", "-9223372036854775808"}) == "-ERR decrement would overflow\r\n");
  CHECK(one.Call({"DECRBY", "x", "9223372036854775807"}) == ":-9223372036854775807\r\n");
  CHECK(one.Call({"DECR", "x"}) == ":-9223372036854775808\r\n");
  CHECK(one.Call({"DECR", "x"}) == "-ERR increment or decrement would overflow\r\n");

  // SET resets the counter, and increments count over the new value.
  CHECK(two.Call({"SET", "n", "100"}) == "+OK\r\n");
  CHECK(one.Call({"GET", "n"}) == "$3\r\n100\r\n");
  CHECK(one.Call({"INCR", "n"}) == ":101\r\n");
  // DEL resets it: the key is gone, and the next INCR starts from 0.
  CHECK(two.Call({"DEL", "n"}) == ":1\r\n");
  CHECK(one.Call({"GET", "n"}) == "$-1\r\n");
  CHECK(one.Call({"EXISTS", "n"}) == ":0\r\n");
  CHECK(one.Call({"INCR", "n"}) == ":1\r\n");
  CHECK(two.Call({"INCR", "n"}) == ":2\r\n");
  // An expiry applies to the counter; once it passed, INCR starts from 0 again.
  CHECK(one.Call({"PEXPIRE", "n", "200"}) == ":1\r\n");
  const std::string ttl = one.Call({"PTTL", "n"});
  CHECK(IntegerOf(ttl).value_or(-9) > 0);
  CHECK(shardkv::testing::PollUntil(
      [&] {
        return one.Call({"GET", "n"}) == "$-1\r\n";
      },
      std::chrono::seconds(10)));
  CHECK(two.Call({"INCR", "n"}) == ":1\r\n");
  CHECK(one.Call({"INCRBY", "n", "4"}) == ":5\r\n");
  CHECK(one.Call({"PTTL", "n"}) == ":-1\r\n");

  // The native client's Incr is the same operation.
  auto client = c.Connect();
  REQUIRE(client.ok());
  auto v = (*client)->Incr("n", 10);
  REQUIRE(v.ok());
  CHECK(*v == 15);
  v = (*client)->Incr("n", -20);
  REQUIRE(v.ok());
  CHECK(*v == -5);
  auto got = (*client)->Get("n");
  REQUIRE(got.ok());
  CHECK(*got == "-5");
  CHECK(two.Call({"INCR", "n"}) == ":-4\r\n");
  CHECK((*client)->Incr("t").status().code() == shardkv::Status::Code::kInvalidArgument);
  CHECK((*client)->Incr("m").status().code() == shardkv::Status::Code::kInvalidArgument);
}

TEST_CASE("redis counters: concurrent increments through every node all count, across a restart",
          "[redis][counter]") {
  InProcessCluster c(3, CounterRing());
  WithRedis(c);
  REQUIRE(c.Start().ok());
  const std::vector<std::string> keys = {"hits", "misses"};

  // Each client runs `n` INCR or DECR of keys[i % 2] through one node; what was acknowledged and
  // what was not (an error or no reply) is summed per key.
  struct Tally {
    int64_t acked[2] = {0, 0};
    int64_t unacked_up[2] = {0, 0};    // unacknowledged increments
    int64_t unacked_down[2] = {0, 0};  // unacknowledged decrements
  };
  auto run = [&](uint16_t port, int n, int salt, Tally* t) {
    RawClient client(port);
    for (int i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(i + salt) % 2;
      const bool down = (i + salt) % 7 == 0;
      const std::string reply = client.Call({down ? "DECR" : "INCR", keys[k]});
      if (IntegerOf(reply)) {
        t->acked[k] += down ? -1 : 1;
      } else {
        (down ? t->unacked_down : t->unacked_up)[k] += 1;
      }
    }
  };
  auto run_all = [&](const std::vector<uint32_t>& nodes, int n, std::vector<Tally>* tallies) {
    std::vector<uint16_t> ports;
    for (uint32_t id : nodes) ports.push_back(RedisPort(c, id));
    std::vector<std::thread> threads;
    const size_t first = tallies->size();
    tallies->resize(first + 2 * nodes.size());
    for (size_t i = 0; i < 2 * nodes.size(); ++i) {
      threads.emplace_back(run, ports[i / 2], n, static_cast<int>(i), &(*tallies)[first + i]);
    }
    for (std::thread& t : threads) t.join();
  };
  auto check_totals = [&](const std::vector<Tally>& tallies, bool all_acked) {
    for (size_t k = 0; k < 2; ++k) {
      int64_t acked = 0;
      int64_t up = 0;
      int64_t down = 0;
      for (const Tally& t : tallies) {
        acked += t.acked[k];
        up += t.unacked_up[k];
        down += t.unacked_down[k];
      }
      INFO(keys[k] << ": acknowledged " << acked << ", unacknowledged +" << up << " -" << down);
      if (all_acked) CHECK(up + down == 0);
      // Every node reads the same value: every acknowledged change, and of the unacknowledged
      // ones some subset.
      for (uint32_t id = 1; id <= c.size(); ++id) {
        RawClient reader(RedisPort(c, id));
        // (A node just restarted may still be starting: it answers CLUSTERDOWN until ready.)
        std::string got;
        REQUIRE(shardkv::testing::PollUntil(
            [&] {
              got = reader.Call({"GET", keys[k]});
              return got.size() > 4 && got[0] == '$';
            },
            std::chrono::seconds(10)));
        const int64_t value = std::stoll(got.substr(got.find("\r\n") + 2));
        INFO("node " << id << " reads " << value);
        CHECK(value >= acked - down);
        CHECK(value <= acked + up);
        if (up + down == 0) CHECK(value == acked);
      }
    }
  };

  // Two clients per node, all at once, on two counters.
  std::vector<Tally> tallies;
  run_all({1, 2, 3}, 120, &tallies);
  check_totals(tallies, true);

  // Node 3 stops; the others go on; it restarts (same data) and counts on.
  c.StopNode(3);
  run_all({1, 2}, 80, &tallies);
  REQUIRE(c.RestartNode(3).ok());
  run_all({3, 1}, 80, &tallies);
  check_totals(tallies, false);

  // A scale-out streams the counters to node 4 while increments go on through nodes 1 and 2
  // (other keys, ~1 MB, at 256 KB/s, keep the stream going for seconds).
  {
    auto loader = c.Connect();
    REQUIRE(loader.ok());
    const std::string filler(1000, 'f');
    for (int i = 0; i < 1000; ++i)
      REQUIRE((*loader)->Put("filler" + std::to_string(i), filler).ok());
  }
  auto added = c.AddStandaloneNode();
  REQUIRE(added.ok());
  auto admin = shardkv::testing::AdminFor(c);
  const shardkv::AdminReply begun = admin->Begin(
      shardkv::ChangeRequest{shardkv::ChangeKind::kAdd, *added, c.Address(*added), 1.0},
      shardkv::ChangeThrottle{256u << 10, 1});
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  run_all({1, 2}, 80, &tallies);
  auto ended = shardkv::testing::WaitChangeEnded(*admin, std::chrono::seconds(60));
  REQUIRE(ended.ok());
  CHECK(ended->record.state == shardkv::ChangeState::kDone);
  run_all({4}, 40, &tallies);
  check_totals(tallies, false);
}
