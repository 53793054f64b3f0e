// `shardkv repair` (design.md "Anti-entropy") against real node processes: keys and a tombstone
// removed from a stopped node's database with RocksDB's own `ldb` (Debian rocksdb-tools, default
// options: the on-disk layout design.md documents), then a repair streams exactly those back, and
// every replica's database holds the same records again. Checked with `ldb` on the stopped nodes,
// never through client reads (read repair would hide a repair that does nothing).
#include <unistd.h>

#include <catch2/catch.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_harness.h"

namespace {

using shardkv::testing::Contains;
using shardkv::testing::Field;
using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;

constexpr const char* kLdb = "/usr/bin/ldb";

std::string Db(const LocalCluster& c, int id) {
  return c.dir() + "/node-" + std::to_string(id) + "/db";
}

// `ldb scan` of a stopped node's data column family: "0xKEY : 0xVALUE" lines, in key order.
std::vector<std::string> Scan(const LocalCluster& c, int id) {
  ProcessResult r =
      RunProcess({kLdb, "--db=" + Db(c, id), "--column_family=data", "--hex", "scan"});
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.find(" : ") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// The envelope's flags byte (value hex "0x" + format byte + flags byte): bit 0 is a tombstone.
bool Tombstone(const std::string& line) {
  const std::string value = line.substr(line.find(" : ") + 3);
  return value.size() >= 6 && value[5] == '1';
}

}  // namespace

TEST_CASE("repair: keys and a tombstone removed with ldb are streamed back",
          "[multiprocess][repair]") {
  if (access(kLdb, X_OK) != 0) FAIL("ldb not found: install rocksdb-tools (tools/install-deps.sh)");
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0"}).exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "300"}).exit_code == 0);
  for (const char* key : {"key:0", "key:1", "key:2", "key:3"}) {
    ProcessResult del = c.Run({"del", key});
    INFO(del.Text());
    REQUIRE(del.exit_code == 0);
  }
  // Nothing to repair yet.
  ProcessResult clean = c.Run({"repair", "--json"});
  INFO(clean.Text());
  REQUIRE(clean.exit_code == 0);
  CHECK(Field(clean.out, "keys_streamed") == "0");
  CHECK(Field(clean.out, "ranges_differed") == "0");

  REQUIRE(c.Run({"cluster", "stop-node", "2"}).exit_code == 0);
  const std::vector<std::string> before = Scan(c, 2);
  REQUIRE(before.size() == 300);
  int live_removed = 0, tombstones_removed = 0;
  for (const std::string& line : before) {
    const bool tomb = Tombstone(line);
    if (tomb ? tombstones_removed >= 2 : live_removed >= 20) continue;
    const std::string key = line.substr(0, line.find(" : "));
    ProcessResult del =
        RunProcess({kLdb, "--db=" + Db(c, 2), "--column_family=data", "--hex", "delete", key});
    INFO(del.Text());
    REQUIRE(del.exit_code == 0);
    ++(tomb ? tombstones_removed : live_removed);
  }
  REQUIRE(live_removed == 20);
  REQUIRE(tombstones_removed == 2);
  REQUIRE(Scan(c, 2).size() == 278);
  REQUIRE(c.Run({"cluster", "start-node", "2"}).exit_code == 0);

  ProcessResult repair = c.Run({"repair", "--json"});
  INFO(repair.Text());
  REQUIRE(repair.exit_code == 0);
  CHECK(Field(repair.out, "complete") == "true");
  CHECK(Field(repair.out, "keys_streamed") == "22");
  CHECK(Contains(repair.out, "\"streamed\":[{\"node\":2,\"keys\":22,"));
  CHECK(Field(repair.out, "ranges_failed") == "0");
  WARN("repair of 22 keys removed from 300: " << repair.out);

  ProcessResult again = c.Run({"repair"});
  INFO(again.Text());
  REQUIRE(again.exit_code == 0);
  CHECK(Contains(again.out, "keys streamed: 0"));
  CHECK(Contains(again.out, "ranges compared: "));

  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  // The cluster is down: unreachable, exit 3.
  CHECK(c.Run({"repair"}).exit_code == 3);
  // Every replica holds the same records: node 2's as before the damage, tombstones included.
  const std::vector<std::string> one = Scan(c, 1);
  CHECK(one == before);
  CHECK(Scan(c, 2) == before);
  CHECK(Scan(c, 3) == before);
}
