// `shardkv cluster set`: the replication factor and quorums of a running local cluster changed
// through the CLI (1 -> 3, then 3 -> 2), with the loaded keys verified at consistency all after
// each change, and the refusals that leave the cluster as it was.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "testing/cli_harness.h"

namespace {

using shardkv::testing::Contains;
using shardkv::testing::LineCount;
using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;

}  // namespace

TEST_CASE("cli: cluster set changes the replication factor of a running cluster",
          "[multiprocess][params]") {
  LocalCluster c;
  ProcessResult up = c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--replicas", "1",
                            "--write-quorum", "1", "--read-quorum", "1", "--wait", "60"});
  INFO(up.err);
  REQUIRE(up.exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "3000"}).exit_code == 0);

  // Refused before anything is planned or committed: exit 2, one line, the cluster unchanged.
  ProcessResult none = c.Run({"cluster", "set", "--yes"});
  CHECK(none.exit_code == 2);
  CHECK(Contains(none.err, "nothing to change"));
  ProcessResult above = c.Run({"cluster", "set", "--write-quorum", "2", "--yes"});
  CHECK(above.exit_code == 2);
  CHECK(Contains(above.err, "write quorum 2 is above the replication factor 1"));
  ProcessResult same = c.Run({"cluster", "set", "--replicas", "1", "--yes"});
  CHECK(same.exit_code == 2);
  CHECK(Contains(same.err, "nothing to change"));
  ProcessResult unconfirmed = c.RunWithInput({"cluster", "set", "--replicas", "3"}, "");
  CHECK(unconfirmed.exit_code == 2);
  CHECK(Contains(unconfirmed.err, "--yes"));

  ProcessResult plan = c.Run({"cluster", "set", "--replicas", "3", "--write-quorum", "2",
                              "--read-quorum", "2", "--plan-only", "--json"});
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  CHECK(Contains(plan.out, "\"kind\":\"params\""));
  CHECK(Contains(plan.out, "\"planned_copies\":6000"));  // two new copies of each key
  CHECK(Contains(plan.out, "\"replicas_after\":3"));
  // The plan names the node that computed it (the leader) by its own address, whichever node
  // was asked (two of the three forward to the leader).
  auto port_of = [&](const std::string& id) {
    std::ifstream f(c.dir() + "/node-" + id + "/port");
    std::string port;
    f >> port;
    return "127.0.0.1:" + port;
  };
  for (const char* asked : {"1", "2", "3"}) {
    ProcessResult p =
        c.Run({"cluster", "set", "--replicas", "3", "--write-quorum", "2", "--read-quorum", "2",
               "--plan-only", "--json", "--cluster", port_of(asked)});
    INFO("asked node " << asked << ": " << p.out << p.err);
    std::smatch planner;
    REQUIRE(std::regex_search(
        p.out, planner, std::regex("\"planned_by\":([0-9]+),\"planned_by_address\":\"([^\"]+)\"")));
    CHECK(planner[2].str() == port_of(planner[1].str()));
  }
  CHECK(c.Run({"cluster", "status"}).out.find("replicas 1, write quorum 1, read quorum 1") !=
        std::string::npos);

  ProcessResult grow = c.Run(
      {"cluster", "set", "--replicas", "3", "--write-quorum", "2", "--read-quorum", "2", "--yes"});
  INFO(grow.err);
  REQUIRE(grow.exit_code == 0);
  CHECK(Contains(grow.out, "set replicas 1 -> 3, write quorum 1 -> 2, read quorum 1 -> 2"));
  ProcessResult watch = c.Run({"rebalance", "watch", "--timeout-s", "120"});
  INFO(watch.out << watch.err);
  REQUIRE(watch.exit_code == 0);
  CHECK(Contains(watch.out, "copies moved:   6000 of 6000 planned"));
  ProcessResult status = c.Run({"cluster", "status"});
  CHECK(Contains(status.out, "replicas 3, write quorum 2, read quorum 2"));
  // Every replica of every key answers: consistency all needs all three copies.
  ProcessResult all3 = c.Run({"--consistency", "all", "verify", "--count", "3000"});
  INFO(all3.out << all3.err);
  CHECK(all3.exit_code == 0);

  ProcessResult shrink =
      c.Run({"cluster", "set", "--replicas", "2", "--read-quorum", "1", "--yes"});
  INFO(shrink.err);
  REQUIRE(shrink.exit_code == 0);
  CHECK(Contains(shrink.out, "0 copies to move"));
  REQUIRE(c.Run({"rebalance", "watch", "--timeout-s", "120"}).exit_code == 0);
  status = c.Run({"cluster", "status", "--json"});
  CHECK(Contains(status.out, "\"replicas\":2"));
  CHECK(Contains(status.out, "\"write_quorum\":2"));
  CHECK(Contains(status.out, "\"read_quorum\":1"));
  ProcessResult all2 = c.Run({"--consistency", "all", "verify", "--count", "3000"});
  INFO(all2.out << all2.err);
  CHECK(all2.exit_code == 0);
  ProcessResult status_json = c.Run({"rebalance", "status", "--json"});
  CHECK(LineCount(status_json.out) == 1);
  CHECK(Contains(status_json.out, "\"kind\":\"params\""));
  CHECK(Contains(status_json.out, "\"state\":\"done\""));
  CHECK(Contains(status_json.out, "\"members_behind\":[]"));
  CHECK(
      Contains(c.Run({"rebalance", "status"}).out, "installed: every member holds the final map"));

  // A member that does not answer cannot be known to hold the final map: status names it.
  std::ifstream pid_file(c.dir() + "/node-3/pid");
  pid_t pid = 0;
  REQUIRE(pid_file >> pid);
  REQUIRE(kill(pid, SIGKILL) == 0);
  status_json = c.Run({"rebalance", "status", "--json"});
  INFO(status_json.out << status_json.err);
  CHECK(Contains(status_json.out, "\"members_behind\":[{\"id\":3,\"epoch\":null}]"));
  ProcessResult text = c.Run({"rebalance", "status"});
  CHECK(Contains(text.out, "installed: not everywhere yet: node 3 did not answer"));
}
