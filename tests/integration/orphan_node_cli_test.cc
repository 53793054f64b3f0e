// A `cluster add-node` killed before its change began leaves a node directory that never became
// a member (tools/shardkv/orphan_nodes.h): it must not stop `cluster up` of the cluster, `cluster
// status` must list it with the command that removes it, and a node joined by hand from such a
// directory must come back at its address after a restart.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "testing/cli_background.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::Contains;
using shardkv::testing::Field;
using shardkv::testing::LocalCluster;
using shardkv::testing::ParseStatus;
using shardkv::testing::ProcessResult;
using shardkv::testing::ReadAll;
namespace fs = std::filesystem;

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
  const std::string address = "127.0.0.1:" + c.NodePort(2);
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

// `cluster status` only reports: the node a finished remove took out keeps running and is shown as
// left, however often status runs; `cluster retire-node` is the command that stops it and marks
// its directory removed (data kept), and it refuses a member.
TEST_CASE("left node: status changes nothing and retire-node stops it and marks it removed",
          "[multiprocess][orphan]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0"}).exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "200"}).exit_code == 0);
  const auto pid = shardkv::testing::ReadPid(c.dir() + "/node-3/pid");
  REQUIRE(pid.has_value());
  ProcessResult remove = c.Run({"cluster", "remove-node", "3", "--yes"});
  INFO(remove.Text());
  REQUIRE(remove.exit_code == 0);
  auto end = shardkv::testing::WaitChangeEnded(*shardkv::testing::AdminForDir(c.dir()),
                                               std::chrono::seconds(120));
  REQUIRE(end.ok());
  REQUIRE(end->record.state == shardkv::ChangeState::kDone);

  for (int round = 0; round < 2; ++round) {
    ProcessResult status = c.Run({"cluster", "status", "--json"});
    INFO(status.Text());
    CHECK(status.exit_code == 0);
    CHECK(Contains(NodeJson(status.out, 3), "\"state\":\"left\""));
    CHECK(Contains(NodeJson(status.out, 3), "retire-node 3"));
    CHECK(status.err.empty());
  }
  ProcessResult table = c.Run({"cluster", "status"});
  CHECK(Contains(table.out + table.err, "retire-node 3"));
  CHECK(shardkv::testing::Alive(*pid));
  CHECK_FALSE(fs::exists(c.dir() + "/node-3/removed"));

  ProcessResult member = c.Run({"cluster", "retire-node", "2"});
  INFO(member.Text());
  CHECK(member.exit_code == 2);
  CHECK(Contains(member.err, "is a member"));
  CHECK(Contains(member.err, "nothing was changed"));

  ProcessResult retire = c.Run({"cluster", "retire-node", "3"});
  INFO(retire.Text());
  CHECK(retire.exit_code == 0);
  CHECK(Contains(retire.out, "node 3 retired: stopped its process"));
  CHECK_FALSE(shardkv::testing::Alive(*pid));
  CHECK(fs::exists(c.dir() + "/node-3/removed"));
  CHECK(fs::exists(c.dir() + "/node-3/db"));  // data kept
  const auto nodes = ParseStatus(c.Run({"cluster", "status", "--json"}).out);
  CHECK(nodes.size() == 2);
  CHECK(c.Run({"cluster", "retire-node", "3"}).exit_code == 2);  // every command skips it now
  CHECK(c.Run({"verify", "--count", "200"}).exit_code == 0);
}
