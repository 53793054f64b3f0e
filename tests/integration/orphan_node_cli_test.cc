// A `cluster add-node` killed before its change began leaves a node directory that never became
// a member (tools/shardkv/orphan_nodes.h): it must not stop `cluster up` of the cluster, `cluster
// status` must list it with the command that removes it, and a node joined by hand from such a
// directory must come back at its address after a restart.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "integration/cli_background.h"
#include "integration/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::Contains;
using shardkv::testing::Field;
using shardkv::testing::LocalCluster;
using shardkv::testing::ParseStatus;
using shardkv::testing::ProcessResult;
namespace fs = std::filesystem;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string PortOf(const LocalCluster& c, int id) {
  std::ifstream in(c.dir() + "/node-" + std::to_string(id) + "/port");
  int port = 0;
  in >> port;
  return std::to_string(port);
}

// The JSON object of node `id` in `cluster status --json`.
std::string NodeJson(const std::string& json, int id) {
  const size_t at = json.find("{\"id\":" + std::to_string(id) + ",");
  if (at == std::string::npos) return "";
  return json.substr(at, json.find('}', at) - at + 1);
}

}  // namespace

TEST_CASE("orphan node: a killed add-node's node does not block cluster up, forget-node removes it",
          "[multiprocess][orphan]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "2", "--base-port", "0"}).exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "100"}).exit_code == 0);
  REQUIRE(shardkv::testing::KillAddNodeLeavingOrphan(c) == 3);

  // While it runs, status already names it and the way out.
  ProcessResult running = c.Run({"cluster", "status", "--json"});
  INFO(running.Text());
  CHECK(Contains(NodeJson(running.out, 3), "\"state\":\"not-member\""));
  CHECK(Contains(NodeJson(running.out, 3), "forget-node 3"));

  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  ProcessResult up = c.Run({"cluster", "up"});
  INFO(up.Text());
  CHECK(up.exit_code == 0);
  CHECK(Contains(up.err, "node 3 not started"));
  CHECK(Contains(up.err, "'shardkv cluster forget-node 3'"));
  ProcessResult status = c.Run({"cluster", "status"});
  INFO(status.Text());
  CHECK(status.exit_code == 0);
  CHECK(Contains(status.out, "not-member"));
  CHECK(Contains(status.out, "'shardkv cluster forget-node 3'"));
  auto nodes = ParseStatus(c.Run({"cluster", "status", "--json"}).out);
  CHECK(nodes[1].state == "up");
  CHECK(nodes[2].state == "up");
  CHECK(nodes[3].state == "not-member");
  CHECK(c.Run({"verify", "--count", "100"}).exit_code == 0);

  // A member is refused, and so is a node id the directory does not hold.
  ProcessResult member = c.Run({"cluster", "forget-node", "2"});
  CHECK(member.exit_code == 2);
  CHECK(Contains(member.err, "remove-node 2"));
  CHECK(fs::exists(c.dir() + "/node-2"));
  CHECK(c.Run({"cluster", "forget-node", "9"}).exit_code == 2);
  CHECK(c.Run({"cluster", "forget-node", "--help"}).exit_code == 0);

  ProcessResult forget = c.Run({"cluster", "forget-node", "3"});
  INFO(forget.Text());
  CHECK(forget.exit_code == 0);
  CHECK_FALSE(fs::exists(c.dir() + "/node-3"));
  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  ProcessResult again = c.Run({"cluster", "up"});
  CHECK(again.exit_code == 0);
  CHECK_FALSE(Contains(again.err, "forget-node"));
  CHECK(ParseStatus(c.Run({"cluster", "status", "--json"}).out).size() == 2);
}

TEST_CASE("orphan node: a node joined by hand keeps its port across a restart",
          "[multiprocess][orphan]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "1", "--base-port", "0"}).exit_code == 0);
  REQUIRE(shardkv::testing::KillAddNodeLeavingOrphan(c) == 2);
  // The killed launcher never learned the port: the args still say "any port".
  REQUIRE(Contains(ReadAll(c.dir() + "/node-2/args"), "127.0.0.1:0\n"));
  const std::string address = "127.0.0.1:" + PortOf(c, 2);
  ProcessResult join = c.Run({"cluster", "join", address, "--yes"});
  INFO(join.Text());
  REQUIRE(join.exit_code == 0);
  ProcessResult watch = c.Run({"rebalance", "watch", "--timeout-s", "120"});
  INFO(watch.Text());
  REQUIRE(watch.exit_code == 0);

  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  ProcessResult up = c.Run({"cluster", "up"});
  INFO(up.Text());
  CHECK(up.exit_code == 0);
  ProcessResult status = c.Run({"cluster", "status", "--json"});
  INFO(status.Text());
  const std::string node2 = NodeJson(status.out, 2);
  CHECK(Field(node2, "address") == address);
  CHECK(Field(node2, "state") == "up");
  CHECK(Field(node2, "advertised_address") == address);
}
