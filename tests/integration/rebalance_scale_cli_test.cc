// Membership changes at scale and at their limits. Multi-process: real shardkv-node processes
// driven through the shardkv CLI (testing/cli_harness.h).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

using shardkv::testing::Alive;
using shardkv::testing::LocalCluster;
using shardkv::testing::ParseStatus;

namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

// Row 1: at --vnodes 20000 the plan had ~45,000 stream tasks, each driver died of a thread per
// task (std::system_error), and the takeovers took every node down. Now the tasks group the
// ranges by (destination, sources) and run on a bounded pool: the add completes, all alive.
TEST_CASE("rebal: add-node at --vnodes 20000 completes with every node alive",
          "[hardening][rebal]") {
  LocalCluster c;
  auto up = c.Run({"cluster", "up", "--nodes", "3", "--vnodes", "20000", "--base-port", "0"});
  INFO(up.out << up.err);
  REQUIRE(up.exit_code == 0);
  auto load = c.Run({"load", "--count", "3000"});
  INFO(load.out << load.err);
  REQUIRE(load.exit_code == 0);
  auto add = c.Run({"cluster", "add-node", "--yes"});
  INFO(add.out << add.err);
  CHECK(add.exit_code == 0);
  CHECK_FALSE(Has(add.err, "system_error"));
  // add-node returns once the change is committed; poll its status until it ends.
  auto end = shardkv::testing::WaitChangeEnded(*shardkv::testing::AdminForDir(c.dir()),
                                               std::chrono::seconds(120));
  INFO(end.status().ToString());
  REQUIRE(end.ok());
  INFO(shardkv::testing::DescribeChange(*end));
  CHECK(end->record.state == shardkv::ChangeState::kDone);
  for (pid_t pid : c.Pids()) CHECK(Alive(pid));
  auto status = c.Run({"cluster", "status", "--json"});
  const auto nodes = ParseStatus(status.out);
  CHECK(nodes.size() == 4);
  for (const auto& [id, node] : nodes) {
    INFO("node " << id << " " << node.state);
    CHECK(node.alive);
  }
}

// Row 8 (plan side): removing the last node is refused up front, with --plan-only too.
TEST_CASE("rebal: removing the last node is refused", "[hardening][rebal]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "1", "--base-port", "0"}).exit_code == 0);
  for (std::vector<std::string> args :
       {std::vector<std::string>{"cluster", "remove-node", "1", "--plan-only"},
        std::vector<std::string>{"cluster", "remove-node", "1", "--yes"}}) {
    auto r = c.Run(args);
    INFO(r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK(Has(r.out + r.err, "cannot remove the last node"));
  }
}
