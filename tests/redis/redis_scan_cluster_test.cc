// Scans with real clients against a 3-node `cluster up` cluster (issue 13 §3, "Done means"):
// `shardkv scan` and `redis-cli --scan` return every key, through a scale-out (a scan paused
// before it and resumed after it with its old cursor) and a node restart; FLUSHALL wipes the
// cluster (cluster up allows it).
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/cli_harness.h"
#include "testing/subprocess.h"

using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;

namespace {

constexpr char kScanRedisCli[] = "/usr/bin/redis-cli";
constexpr auto kScanLimit = std::chrono::seconds(120);
constexpr int kKeys = 3000;

std::vector<std::string> RedisPorts(const LocalCluster& c) {
  ProcessResult r = c.Run({"cluster", "status", "--json"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  const std::regex re("\"redis_address\":\"[^\"]*:([0-9]+)\"");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// Lines of `text` counted: every line once in `seen` (a multiset by count).
void AddLines(const std::string& text, std::map<std::string, int>* seen) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) ++(*seen)[line];
  }
}

// How many of key:0 .. key:<kKeys-1> are missing from `seen`.
int Missing(const std::map<std::string, int>& seen) {
  int missing = 0;
  for (int i = 0; i < kKeys; ++i) missing += seen.count("key:" + std::to_string(i)) ? 0 : 1;
  return missing;
}

std::map<std::string, int> ShardkvScan(const LocalCluster& c, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"scan", "--count", "200"};
  args.insert(args.end(), extra.begin(), extra.end());
  ProcessResult r = c.Run(args);
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  std::map<std::string, int> seen;
  AddLines(r.out, &seen);
  return seen;
}

std::map<std::string, int> RedisCliScan(const std::string& port, const std::string& pattern = "") {
  std::vector<std::string> args = {kScanRedisCli, "-p", port, "--scan"};
  if (!pattern.empty()) args.insert(args.end(), {"--pattern", pattern});
  ProcessResult r = RunProcess(args, kScanLimit);
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  std::map<std::string, int> seen;
  AddLines(r.out, &seen);
  return seen;
}

// One `shardkv scan --cursor` batch: its keys into `seen`, and the next cursor.
std::string OneBatch(const LocalCluster& c, const std::string& cursor,
                     std::map<std::string, int>* seen) {
  ProcessResult r = c.Run({"scan", "--cursor", cursor, "--count", "100"});
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  AddLines(r.out, seen);
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex("cursor ([0-9]+)")));
  return m[1];
}

// DBSIZE on `port`, polled until it is `want` or 30 s pass (replicas converge, and the listener
// caches the members' stats for a second); the last answer.
long AwaitDbsize(const std::string& port, long want) {
  long size = -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    ProcessResult r = RunProcess({kScanRedisCli, "-p", port, "DBSIZE"}, kScanLimit);
    size = r.exit_code == 0 && !r.out.empty() ? std::stol(r.out) : -1;
    if (size == want) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling, bounded
  } while (std::chrono::steady_clock::now() < deadline);
  return size;
}

}  // namespace

TEST_CASE("scan: shardkv scan and redis-cli --scan through a scale-out and a restart",
          "[multiprocess][redis][scan]") {
  REQUIRE(std::filesystem::exists(kScanRedisCli));
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60"}).exit_code ==
          0);
  ProcessResult load = c.Run({"load", "--count", std::to_string(kKeys), "--prefix", "key:"});
  INFO(load.Text());
  REQUIRE(load.exit_code == 0);
  std::vector<std::string> ports = RedisPorts(c);
  REQUIRE(ports.size() == 3);

  // A quiet cluster: every key exactly once, from both clients.
  for (const auto& seen : {ShardkvScan(c), RedisCliScan(ports[0])}) {
    CHECK(seen.size() == static_cast<size_t>(kKeys));
    CHECK(Missing(seen) == 0);
    int twice = 0;
    for (const auto& [k, n] : seen) twice += n > 1 ? 1 : 0;
    CHECK(twice == 0);
  }
  // MATCH on both: key:1, key:10..19, key:100..199, key:1000..1999.
  CHECK(ShardkvScan(c, {"--match", "key:1*"}).size() == 1111);
  CHECK(RedisCliScan(ports[1], "key:1*").size() == 1111);
  CHECK(c.Run({"scan", "--match", "nothing*"}).out.empty());

  // A scan paused before a scale-out, resumed after it with its cursor: nothing skipped.
  std::map<std::string, int> seen;
  std::string cursor = "0";
  for (int i = 0; i < 5; ++i) {
    cursor = OneBatch(c, cursor, &seen);
    REQUIRE(cursor != "0");
  }
  CHECK(seen.size() < static_cast<size_t>(kKeys));
  ProcessResult add = c.Run({"cluster", "add-node", "--yes", "--wait", "60"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  for (int i = 0; cursor != "0"; ++i) {
    REQUIRE(i < 10000);
    cursor = OneBatch(c, cursor, &seen);
  }
  CHECK(Missing(seen) == 0);

  // Every node's listener, the new one included, scans the whole cluster.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  ports = RedisPorts(c);
  while (ports.size() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling the status, bounded
    ports = RedisPorts(c);
  }
  REQUIRE(ports.size() == 4);
  CHECK(Missing(RedisCliScan(ports[3])) == 0);

  // A node restart: while it is down (quorum reads from the other two) and after.
  REQUIRE(c.Run({"cluster", "stop-node", "2"}).exit_code == 0);
  CHECK(Missing(ShardkvScan(c)) == 0);
  REQUIRE(c.Run({"cluster", "start-node", "2", "--wait", "60"}).exit_code == 0);
  CHECK(Missing(ShardkvScan(c)) == 0);
  ports = RedisPorts(c);
  for (const std::string& port : ports) CHECK(Missing(RedisCliScan(port)) == 0);

  // KEYS, RANDOMKEY and the wipe (cluster up allows it), from redis-cli.
  ProcessResult keys = RunProcess({kScanRedisCli, "-p", ports[0], "KEYS", "key:2*"}, kScanLimit);
  REQUIRE(keys.exit_code == 0);
  std::map<std::string, int> two;
  AddLines(keys.out, &two);
  CHECK(two.size() == 1111);
  ProcessResult random = RunProcess({kScanRedisCli, "-p", ports[1], "RANDOMKEY"}, kScanLimit);
  CHECK(random.out.rfind("key:", 0) == 0);
  // DBSIZE counts live keys: after the scale-out (the old owners dropped the ranges they gave
  // away) and the restart (node 2 recounted its records), every key once; 0 after the wipe,
  // though the tombstones are still stored.
  CHECK(AwaitDbsize(ports[1], kKeys) == kKeys);
  ProcessResult flush = RunProcess({kScanRedisCli, "-p", ports[2], "FLUSHALL"}, kScanLimit);
  INFO(flush.Text());
  CHECK(flush.out == "OK\n");
  CHECK(AwaitDbsize(ports[3], 0) == 0);
  CHECK(RedisCliScan(ports[0]).empty());
  CHECK(RunProcess({kScanRedisCli, "-p", ports[0], "RANDOMKEY"}, kScanLimit).out == "\n");
  CHECK(c.Run({"scan"}).out.empty());
}
