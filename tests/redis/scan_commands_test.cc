// SCAN, KEYS, RANDOMKEY, FLUSHDB/FLUSHALL and the read-modify-write string commands (SETNX,
// GETSET, GETDEL, MSETNX) against a fake backend: Redis 7.0.15's reply types and error strings
// (each checked against a local redis-server), the option parsing, the bounds and the refusal of
// a wipe the node does not allow. The scan itself (cursor across a scale-out, merging, bounds)
// is tested against real clusters in tests/cluster/scan_test.cc.
#include "redis/scan_commands.h"

#include <catch2/catch.hpp>
#include <string>

#include "redis/command_harness.h"
#include "redis/fake_backend.h"
#include "redis/redis_commands.h"

using namespace shardkv;
using namespace shardkv::redis;

namespace {

struct ScanFixture : testing::CommandHarness<> {
  explicit ScanFixture(bool allow_flush = false)
      : testing::CommandHarness<>({.secret = "", .allow_flush = allow_flush}) {}
  void Fill(int n, const std::string& prefix = "k") {
    for (int i = 0; i < n; ++i) handler.data[prefix + std::to_string(i)] = "v";
  }
};

// The cursor and the keys of a SCAN reply "*2\r\n$N\r\nCURSOR\r\n*M\r\n...".
std::string CursorOf(const std::string& reply) {
  const size_t start = reply.find("\r\n", 4) + 2;
  return reply.substr(start, reply.find("\r\n", start) - start);
}

}  // namespace

TEST_CASE("redis scan: SCAN replies and errors as redis-server 7.0.15", "[redis][scan]") {
  ScanFixture f;
  // An empty keyspace: cursor "0" and an empty array.
  CHECK(f.One({"SCAN", "0"}) == "*2\r\n$1\r\n0\r\n*0\r\n");
  CHECK(f.One({"SCAN", "x"}) == "-ERR invalid cursor\r\n");
  CHECK(f.One({"SCAN", " 1"}) == "-ERR invalid cursor\r\n");
  CHECK(f.One({"SCAN", "1x"}) == "-ERR invalid cursor\r\n");
  CHECK(f.One({"SCAN", "99999999999999999999999"}) == "-ERR invalid cursor\r\n");
  CHECK(f.One({"SCAN", "0", "COUNT", "0"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SCAN", "0", "COUNT", "-1"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SCAN", "0", "COUNT", "x"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(f.One({"SCAN", "0", "MATCH"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SCAN", "0", "BOGUS", "1"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SCAN"}) == "-ERR wrong number of arguments for 'scan' command\r\n");
  CHECK(f.handler.scans == 1);

  f.Fill(25);
  f.handler.data["user:1"] = "u";
  f.handler.data["user:2"] = "u";
  // "-1" is the largest cursor for redis's strtoul, and "" is 0: both accepted as there.
  CHECK(f.One({"SCAN", "-1"}).rfind("*2\r\n", 0) == 0);
  CHECK(f.One({"SCAN", ""}) == f.One({"SCAN", "0"}));
  // Default COUNT 10: three calls for 27 keys, the last returns cursor 0.
  std::string reply = f.One({"SCAN", "0"});
  CHECK(CursorOf(reply) != "0");
  CHECK(reply.find("*10\r\n") != std::string::npos);
  reply = f.One({"SCAN", CursorOf(reply)});
  CHECK(reply.find("*10\r\n") != std::string::npos);
  reply = f.One({"SCAN", CursorOf(reply), "count", "100"});
  CHECK(CursorOf(reply) == "0");
  CHECK(reply.find("*7\r\n") != std::string::npos);
  const std::string users = f.One({"SCAN", "0", "MATCH", "user:*", "COUNT", "1000"});
  CHECK(users.rfind("*2\r\n$1\r\n0\r\n*2\r\n$6\r\nuser:", 0) == 0);
  // TYPE: every key is a string.
  CHECK(f.One({"SCAN", "0", "TYPE", "STRING", "COUNT", "1000"}).find("*27\r\n") !=
        std::string::npos);
  CHECK(f.One({"SCAN", "0", "TYPE", "list"}) == "*2\r\n$1\r\n0\r\n*0\r\n");
  CHECK(f.One({"SCAN", "0", "TYPE", "nosuch"}) == "*2\r\n$1\r\n0\r\n*0\r\n");
}

TEST_CASE("redis scan: KEYS and RANDOMKEY", "[redis][scan]") {
  ScanFixture f;
  CHECK(f.One({"KEYS", "*"}) == "*0\r\n");
  CHECK(f.One({"RANDOMKEY"}) == "$-1\r\n");
  f.Fill(2500);
  f.handler.data["user:1"] = "u";
  CHECK(f.One({"KEYS", "user:*"}) == "*1\r\n$6\r\nuser:1\r\n");
  CHECK(f.One({"KEYS", "*"}).rfind("*2501\r\n", 0) == 0);  // gathered over several batches
  CHECK(f.One({"KEYS", "k1?"}).rfind("*10\r\n", 0) == 0);
  const std::string random = f.One({"RANDOMKEY"});
  REQUIRE(random.rfind("$", 0) == 0);
  const std::string key = random.substr(random.find("\r\n") + 2);
  CHECK(f.handler.data.count(key.substr(0, key.size() - 2)) == 1);
  CHECK(f.One({"RANDOMKEY", "x"}) == "-ERR wrong number of arguments for 'randomkey' command\r\n");
}

TEST_CASE("redis scan: KEYS refuses a reply above its bound", "[redis][scan]") {
  ScanFixture f;
  f.Fill(static_cast<int>(kMaxKeysReply) + 1);
  const std::string reply = f.One({"KEYS", "*"});
  CHECK(reply.rfind("-ERR KEYS would return more than 100000 keys; use SCAN", 0) == 0);
}

TEST_CASE("redis scan: FLUSHDB and FLUSHALL are refused unless the node allows them",
          "[redis][scan]") {
  ScanFixture refused;
  refused.Fill(5);
  const std::string no = refused.One({"FLUSHDB"});
  CHECK(no.rfind("-ERR FLUSHDB is disabled on this node: it deletes every key of the whole "
                 "cluster. Enable it with shardkv-node --redis-allow-flush",
                 0) == 0);
  CHECK(refused.One({"FLUSHALL", "ASYNC"}).rfind("-ERR FLUSHALL is disabled", 0) == 0);
  CHECK(refused.handler.data.size() == 5);
  CHECK(refused.One({"FLUSHDB", "BOGUS"}) == "-ERR syntax error\r\n");

  ScanFixture allowed(true);
  allowed.Fill(2345);
  CHECK(allowed.One({"FLUSHDB", "BOGUS"}) == "-ERR syntax error\r\n");
  CHECK(allowed.One({"FLUSHDB", "a", "b"}) == "-ERR syntax error\r\n");
  CHECK(allowed.handler.data.size() == 2345);
  CHECK(allowed.One({"FLUSHDB"}) == "+OK\r\n");
  CHECK(allowed.handler.data.empty());
  allowed.Fill(3);
  CHECK(allowed.One({"FLUSHALL", "sync"}) == "+OK\r\n");
  CHECK(allowed.handler.data.empty());
  CHECK(allowed.One({"FLUSHALL", "ASYNC"}) == "+OK\r\n");  // an empty keyspace too
}

TEST_CASE("redis rmw: SETNX, GETSET, GETDEL and MSETNX replies", "[redis][rmw]") {
  ScanFixture f;
  CHECK(f.One({"SETNX", "k", "v"}) == ":1\r\n");
  CHECK(f.One({"SETNX", "k", "w"}) == ":0\r\n");
  CHECK(f.handler.data.at("k") == "v");
  CHECK(f.One({"GETSET", "k", "x"}) == "$1\r\nv\r\n");
  CHECK(f.handler.data.at("k") == "x");
  CHECK(f.One({"GETSET", "n", "x"}) == "$-1\r\n");
  CHECK(f.handler.data.at("n") == "x");
  CHECK(f.One({"GETDEL", "k"}) == "$1\r\nx\r\n");
  CHECK(f.handler.data.count("k") == 0);
  CHECK(f.One({"GETDEL", "k"}) == "$-1\r\n");
  CHECK(f.One({"MSETNX", "a", "1", "b", "2"}) == ":1\r\n");
  CHECK(f.handler.data.at("b") == "2");
  CHECK(f.One({"MSETNX", "a", "1", "c", "2"}) == ":0\r\n");
  CHECK(f.handler.data.count("c") == 0);  // nothing written when one key exists
  CHECK(f.One({"MSETNX", "a", "1", "c"}) ==
        "-ERR wrong number of arguments for 'msetnx' command\r\n");
  CHECK(f.One({"SETNX", "k"}) == "-ERR wrong number of arguments for 'setnx' command\r\n");
  CHECK(f.One({"GETDEL"}) == "-ERR wrong number of arguments for 'getdel' command\r\n");
  // Still refused, with the reason.
  for (const char* cmd : {"INCRBYFLOAT", "APPEND", "SETRANGE", "RENAME"}) {
    Args args{cmd, "k"};
    args.push_back("x");
    if (std::string(cmd) == "SETRANGE") args.push_back("y");
    INFO(cmd);
    CHECK(f.One(args).find("is refused by shardkv: a read-modify-write is not atomic") !=
          std::string::npos);
  }
  f.handler.fail_with = Status::Unavailable("read quorum not reached");
  CHECK(f.One({"SETNX", "z", "v"}) == "-ERR read quorum not reached\r\n");
}
