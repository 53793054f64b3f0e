// TTLs through the real CLI against `cluster up` clusters (multi-process): a TTL key survives a
// node restart and a scale-out, reads until it expires, then reads as missing at ALL.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "testing/cli_harness.h"

using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;

namespace {

// Polls `cond` every 100 ms, at most `limit`.
template <typename F>
bool Poll(F cond, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 0; i < 10'000; ++i) {
    if (cond()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return cond();
}

int64_t TtlOf(const LocalCluster& c, const std::string& key) {
  ProcessResult r = c.Run({"ttl", key});
  return std::stoll(r.out);
}

}  // namespace

TEST_CASE("ttl: put --ttl, ttl, expire, persist across a restart and a scale-out, and counters",
          "[multiprocess][ttl]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60"}).exit_code ==
          0);
  // Bad input first (exit 2, nothing sent).
  CHECK(c.Run({"put", "k", "v", "--ttl", "0"}).exit_code == 2);
  CHECK(c.Run({"put", "k", "v", "--ttl", "-3"}).exit_code == 2);
  CHECK(c.Run({"ttl", "--help"}).exit_code == 0);
  CHECK(c.Run({"expire", "--help"}).exit_code == 0);
  CHECK(c.Run({"persist", "--help"}).exit_code == 0);

  REQUIRE(c.Run({"put", "short", "s", "--ttl", "20"}).exit_code == 0);
  REQUIRE(c.Run({"put", "long", "l", "--ttl", "3600"}).exit_code == 0);
  REQUIRE(c.Run({"put", "plain", "p"}).exit_code == 0);
  CHECK(TtlOf(c, "plain") == -1);
  ProcessResult missing = c.Run({"ttl", "missing"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.out == "-2\n");
  ProcessResult json = c.Run({"ttl", "long", "--json"});
  CHECK(json.exit_code == 0);
  CHECK(json.out.find("\"found\":true") != std::string::npos);
  const int64_t short_ttl = TtlOf(c, "short");
  CHECK(short_ttl > 0);
  CHECK(short_ttl <= 20);

  // A node restart keeps the TTLs.
  REQUIRE(c.Run({"cluster", "stop-node", "2"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "start-node", "2", "--wait", "60"}).exit_code == 0);
  CHECK(TtlOf(c, "long") > 3500);

  // A scale-out streams both registers; `ttl` answers during and after it.
  REQUIRE(c.Run({"cluster", "add-node", "--yes"}).exit_code == 0);
  CHECK(TtlOf(c, "long") > 3500);
  CHECK(c.Run({"get", "long", "--consistency", "all"}).out == "l");

  // EXPIRE and PERSIST on the persistent key, its value untouched.
  REQUIRE(c.Run({"expire", "plain", "600"}).exit_code == 0);
  CHECK(TtlOf(c, "plain") > 500);
  REQUIRE(c.Run({"persist", "plain"}).exit_code == 0);
  CHECK(TtlOf(c, "plain") == -1);
  CHECK(c.Run({"get", "plain"}).out == "p");
  CHECK(c.Run({"expire", "missing", "10"}).exit_code == 1);

  // Counters through the CLI (design.md "Counters"): values, a refusal, JSON, bad input.
  CHECK(c.Run({"incr", "visits"}).out == "1\n");
  CHECK(c.Run({"incr", "visits", "41"}).out == "42\n");
  CHECK(c.Run({"decr", "visits", "2"}).out == "40\n");
  CHECK(c.Run({"get", "visits", "--consistency", "all"}).out == "40");
  const ProcessResult counter_json = c.Run({"incr", "visits", "--json"});
  CHECK(counter_json.exit_code == 0);
  CHECK(counter_json.out.find("\"value\":41") != std::string::npos);
  const ProcessResult not_integer = c.Run({"incr", "plain"});
  CHECK(not_integer.exit_code == 1);
  CHECK(not_integer.err.find("not an integer") != std::string::npos);
  CHECK(c.Run({"incr", "visits", "x"}).exit_code == 2);
  CHECK(c.Run({"decr", "visits", "-9223372036854775808"}).exit_code == 2);
  CHECK(c.Run({"incr", "--help"}).exit_code == 0);

  // Hashes through the CLI (design.md "Hashes").
  CHECK(c.Run({"hset", "user", "name", "ann", "age", "41"}).out == "2\n");
  CHECK(c.Run({"hset", "user", "age", "42"}).out == "0\n");
  CHECK(c.Run({"hget", "user", "age"}).out == "42\n");
  CHECK(c.Run({"hgetall", "user"}).out == "age\t42\nname\tann\n");
  const ProcessResult hash_json = c.Run({"hgetall", "user", "--json"});
  CHECK(hash_json.exit_code == 0);
  CHECK(hash_json.out.find("\"fields\":{\"age\":\"42\",\"name\":\"ann\"}") != std::string::npos);
  CHECK(c.Run({"hget", "user", "zip"}).exit_code == 1);
  CHECK(c.Run({"hdel", "user", "age", "zip"}).out == "1\n");
  CHECK(c.Run({"hgetall", "nohash"}).exit_code == 1);
  const ProcessResult wrong_type = c.Run({"hset", "plain", "f", "v"});
  CHECK(wrong_type.exit_code == 1);
  CHECK(wrong_type.err.find("WRONGTYPE") != std::string::npos);
  CHECK(c.Run({"hset", "user", "odd"}).exit_code == 2);

  // Sets through the CLI (design.md "Sets").
  CHECK(c.Run({"sadd", "tags", "red", "blue", "red"}).out == "2\n");
  CHECK(c.Run({"sadd", "tags", "blue", "green"}).out == "1\n");
  CHECK(c.Run({"smembers", "tags"}).out == "blue\ngreen\nred\n");
  const ProcessResult set_json = c.Run({"smembers", "tags", "--json"});
  CHECK(set_json.exit_code == 0);
  CHECK(set_json.out.find("\"members\":[\"blue\",\"green\",\"red\"]") != std::string::npos);
  CHECK(c.Run({"sismember", "tags", "red"}).out == "1\n");
  const ProcessResult not_member = c.Run({"sismember", "tags", "pink"});
  CHECK(not_member.exit_code == 1);
  CHECK(not_member.out == "0\n");
  CHECK(c.Run({"srem", "tags", "red", "pink", "--json"}).out ==
        "{\"key\":\"tags\",\"removed\":1}\n");
  CHECK(c.Run({"smembers", "noset"}).exit_code == 1);
  const ProcessResult set_wrong_type = c.Run({"sadd", "user", "m"});
  CHECK(set_wrong_type.exit_code == 1);
  CHECK(set_wrong_type.err.find("WRONGTYPE") != std::string::npos);
  CHECK(c.Run({"sadd", "tags"}).exit_code == 2);

  // The short key reads until it expires, then is missing at ALL.
  CHECK(Poll(
      [&] {
        return c.Run({"get", "short", "--consistency", "all"}).exit_code == 1;
      },
      std::chrono::seconds(60)));
  CHECK(TtlOf(c, "short") == -2);
  CHECK(c.Run({"get", "long", "--consistency", "all"}).out == "l");
}
