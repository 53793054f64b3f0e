// Multi-process test of the local cluster launcher: real shardkv-node processes started, stopped
// and restarted through `shardkv cluster ...`, with put/get through the CLI in between.
//
// Every wait is bounded by the CLI's own deadlines (--wait, --timeout), and a guard runs
// `cluster down` (then SIGKILLs anything left) even when an assertion fails, so no node leaks.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "testing/cli_harness.h"

namespace {

using shardkv::testing::Alive;
using shardkv::testing::LineCount;
using shardkv::testing::LocalCluster;
using shardkv::testing::ParseStatus;
using shardkv::testing::ProcessResult;
using shardkv::testing::StatusNode;

std::map<int, StatusNode> Status(const LocalCluster& c, int expected_exit = 0) {
  ProcessResult r = c.Run({"cluster", "status", "--json"});
  REQUIRE(r.exit_code == expected_exit);
  REQUIRE(LineCount(r.out) == 1);
  REQUIRE(r.out.find("\"rebalance\":null") != std::string::npos);
  return ParseStatus(r.out);
}

double ShareSum(const std::map<int, StatusNode>& nodes) {
  double sum = 0;
  for (const auto& [id, n] : nodes) sum += n.share_pct;
  return sum;
}

}  // namespace

TEST_CASE("cluster up, fault drills, restart and down through the CLI", "[multiprocess]") {
  LocalCluster c;
  std::set<pid_t> all_pids;

  ProcessResult up = c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60"});
  REQUIRE(up.exit_code == 0);
  CHECK(up.out.find("epoch 1, ring mode, replicas 3, write quorum 2, read quorum 2") !=
        std::string::npos);
  for (pid_t pid : c.Pids()) all_pids.insert(pid);
  REQUIRE(all_pids.size() == 3);

  // The client commands find the cluster through --dir alone.
  REQUIRE(c.Run({"put", "user:1", "alice"}).exit_code == 0);
  ProcessResult get = c.Run({"get", "user:1"});
  REQUIRE(get.exit_code == 0);
  CHECK(get.out == "alice");  // exact bytes off a terminal

  auto nodes = Status(c);
  REQUIRE(nodes.size() == 3);
  for (const auto& [id, n] : nodes) {
    CHECK(n.state == "up");
    CHECK(n.alive);
    CHECK(n.share_pct > 10);  // 160 vnodes each: about a third each
  }
  CHECK(ShareSum(nodes) == Approx(100.0).margin(0.1));

  SECTION("a killed node shows down, quorum operations go on, start-node brings it back") {
    REQUIRE(c.Run({"cluster", "stop-node", "2", "--kill"}).exit_code == 0);
    nodes = Status(c);
    CHECK(nodes.at(2).state == "down");
    CHECK_FALSE(nodes.at(2).alive);
    CHECK(nodes.at(1).state == "up");
    CHECK(nodes.at(3).state == "up");

    // W = Q = 2 of 3: still available with one replica down.
    REQUIRE(c.Run({"put", "user:2", "bob"}).exit_code == 0);
    CHECK(c.Run({"get", "user:2"}).out == "bob");
    CHECK(c.Run({"get", "user:1"}).out == "alice");

    // Starting a running node is refused; stopping a stopped one fails.
    CHECK(c.Run({"cluster", "start-node", "1"}).exit_code == 2);
    CHECK(c.Run({"cluster", "stop-node", "2"}).exit_code == 1);

    ProcessResult start = c.Run({"cluster", "start-node", "2", "--wait", "60"});
    REQUIRE(start.exit_code == 0);
    for (pid_t pid : c.Pids()) all_pids.insert(pid);
    nodes = Status(c);
    for (const auto& [id, n] : nodes) CHECK(n.state == "up");
    CHECK(c.Run({"get", "user:2"}).out == "bob");

    // A graceful stop and restart too.
    REQUIRE(c.Run({"cluster", "stop-node", "3"}).exit_code == 0);
    REQUIRE(c.Run({"cluster", "start-node", "3", "--wait", "60"}).exit_code == 0);
    for (pid_t pid : c.Pids()) all_pids.insert(pid);
    CHECK(c.Run({"get", "user:1"}).out == "alice");
  }

  SECTION("a second up on the same directory is refused") {
    ProcessResult again = c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0"});
    CHECK(again.exit_code == 2);
    CHECK(LineCount(again.err) == 1);
    CHECK(again.err.find("already holds a running cluster") != std::string::npos);
  }

  SECTION("bad arguments are one-line usage errors") {
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"cluster", "up", "--nodes", "0"},
             {"cluster", "up", "--nodes", "3", "--replicas", "5"},
             {"cluster", "up", "--nodes", "3", "--write-quorum", "4"},
             {"cluster", "up", "--nodes", "3", "--mode", "maglev"},
             {"cluster", "stop-node", "9"},
             {"cluster", "start-node", "9"}}) {
      ProcessResult r = c.Run(args);
      CHECK(r.exit_code == 2);
      CHECK(LineCount(r.err) == 1);
      CHECK(r.err.rfind("error: ", 0) == 0);
    }
    CHECK(c.Run({"cluster", "up", "--nodes", "3", "--replicas", "5"}).err.find("--replicas 5") !=
          std::string::npos);
  }

  ProcessResult down = c.Run({"cluster", "down", "--wait", "30"});
  REQUIRE(down.exit_code == 0);
  for (pid_t pid : all_pids) CHECK_FALSE(Alive(pid));
  CHECK(c.Pids().empty());
  // Data stays (like ccm stop); with every node down, status still lists them, exit 3.
  CHECK(std::filesystem::exists(c.dir() + "/node-1/args"));
  CHECK(std::filesystem::exists(c.dir() + "/node-1/node.log"));
  nodes = Status(c, 3);
  REQUIRE(nodes.size() == 3);
  for (const auto& [id, n] : nodes) CHECK(n.state == "down");
  // A second down finds nothing to stop.
  CHECK(c.Run({"cluster", "down"}).exit_code == 0);
}

TEST_CASE("cluster up in jump mode, and up again after down restarts with the data",
          "[multiprocess]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "2", "--mode", "jump", "--shards", "64", "--base-port",
                 "0", "--wait", "60"})
              .exit_code == 0);
  auto nodes = Status(c);
  REQUIRE(nodes.size() == 2);
  CHECK(ShareSum(nodes) == Approx(100.0).margin(0.01));
  CHECK(nodes.at(1).share_pct == Approx(50.0));  // 32 of 64 primaries each
  REQUIRE(c.Run({"put", "k", "v"}).exit_code == 0);

  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  // Restarting a stopped cluster with different placement flags is refused...
  CHECK(c.Run({"cluster", "up", "--nodes", "3"}).exit_code == 2);
  // ...with the same ones it comes back on the same ports, with its data. (The get right after
  // a whole-cluster restart also exercises the HLC: a restarted node's clock starts at its
  // persisted ceiling, which must not put it past the peers' max_clock_offset.)
  REQUIRE(c.Run({"cluster", "up", "--nodes", "2", "--wait", "60"}).exit_code == 0);
  CHECK(c.Run({"get", "k"}).out == "v");
}
