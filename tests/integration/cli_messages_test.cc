// What the CLI says must be true: the same refusal for the same cause, the addresses and limits
// that apply, the Redis and metrics ports where users look, and a partial result when a load is
// interrupted. Multi-process: real shardkv-node processes driven through the shardkv CLI.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "testing/cli_background.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::BackgroundCli;
using shardkv::testing::Contains;
using shardkv::testing::Field;
using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
namespace fs = std::filesystem;

std::string FileLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

std::string PortOf(const LocalCluster& c, int id, const std::string& file = "port") {
  return FileLine(c.dir() + "/node-" + std::to_string(id) + "/" + file);
}

void UpForMessages(const LocalCluster& c, int nodes) {
  REQUIRE(
      c.Run({"cluster", "up", "--nodes", std::to_string(nodes), "--base-port", "0"}).exit_code ==
      0);
}

}  // namespace

TEST_CASE("cli messages: add-node and remove-node refuse alike without a majority",
          "[multiprocess][cli]") {
  LocalCluster c;
  UpForMessages(c, 3);
  REQUIRE(c.Run({"cluster", "stop-node", "2"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "stop-node", "3"}).exit_code == 0);
  ProcessResult add = c.Run({"cluster", "add-node", "--yes"});
  ProcessResult remove = c.Run({"cluster", "remove-node", "3", "--yes"});
  INFO(add.Text() << remove.Text());
  CHECK(add.exit_code == 3);
  CHECK(remove.exit_code == 3);
  for (const ProcessResult* r : {&add, &remove}) {
    CHECK(Contains(r->err, "no majority: 1 of 3 members of cluster"));
    CHECK(Contains(r->err, "nothing was changed"));
  }
  // Refused before anything started: no new node, no change.
  CHECK_FALSE(fs::exists(c.dir() + "/node-4"));
  CHECK(Field(c.Run({"rebalance", "status", "--json"}).out, "state") == "none");
  ProcessResult json = c.Run({"cluster", "add-node", "--yes", "--json"});
  CHECK(json.exit_code == 3);
  CHECK(Field(json.out, "outcome") == "not_applied");
}

TEST_CASE("cli messages: a change names its driver's own address and the limits that apply",
          "[multiprocess][cli]") {
  LocalCluster c;
  UpForMessages(c, 3);
  REQUIRE(c.Run({"load", "--count", "3000", "--value-size", "4000"}).exit_code == 0);
  // Node 1 hands its consensus leadership on as it stops; it then answers first (the lowest id)
  // while another node drives the change.
  REQUIRE(c.Run({"cluster", "stop-node", "1"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "start-node", "1"}).exit_code == 0);
  ProcessResult add =
      c.Run({"cluster", "add-node", "--yes", "--rate", "1", "--streams", "1", "--wait", "60"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  CHECK(Contains(add.out, "rate:     1.0 MB/s, 1 streams per node"));
  std::smatch m;
  const std::regex driven("driven by node ([0-9]+) \\(([^)]*)\\)");
  REQUIRE(std::regex_search(add.out, m, driven));
  const int driver = std::stoi(m[1]);
  CHECK(m[2] == "127.0.0.1:" + PortOf(c, driver));
  ProcessResult status = c.Run({"rebalance", "status", "--json"});
  INFO(status.Text());
  CHECK(Field(status.out, "rate_bytes_per_s") == std::to_string(1 << 20));
  CHECK(Field(status.out, "streams_per_node") == "1");
  // Steering names the driver's address too (the change streams 1 MB/s: it still runs).
  const std::regex steered("\\(node ([0-9]+) at ([^)]*)\\)");
  for (std::vector<std::string> cmd :
       {std::vector<std::string>{"rebalance", "throttle", "--rate", "1"},
        std::vector<std::string>{"rebalance", "cancel"}}) {
    ProcessResult r = c.Run(cmd);
    INFO(r.Text());
    REQUIRE(r.exit_code == 0);
    REQUIRE(std::regex_search(r.out, m, steered));
    CHECK(m[2] == "127.0.0.1:" + PortOf(c, std::stoi(m[1])));
  }
}

TEST_CASE("cli messages: cluster status shows each node's Redis and metrics ports",
          "[multiprocess][cli]") {
  LocalCluster c;
  UpForMessages(c, 2);
  ProcessResult table = c.Run({"cluster", "status"});
  INFO(table.Text());
  REQUIRE(table.exit_code == 0);
  CHECK(Contains(table.out, "REDIS"));
  CHECK(Contains(table.out, "METRICS"));
  for (int id : {1, 2}) {
    const std::string row_start = "   " + std::to_string(id) + "  127.0.0.1:" + PortOf(c, id);
    const size_t at = table.out.find(row_start);
    REQUIRE(at != std::string::npos);
    const std::string row = table.out.substr(at, table.out.find('\n', at) - at);
    const std::string redis = PortOf(c, id, "redis_port");
    const std::string metrics = PortOf(c, id, "metrics_port");
    REQUIRE_FALSE(redis.empty());
    REQUIRE_FALSE(metrics.empty());
    CHECK(Contains(row, " " + redis + " "));
    CHECK(row.substr(row.size() - metrics.size()) == metrics);
  }
  std::istringstream lines(table.out);
  for (std::string line; std::getline(lines, line);) {
    if (Contains(line, "ADDRESS") || Contains(line, "127.0.0.1:")) CHECK(line.size() <= 100);
  }
}

TEST_CASE("cli messages: --cluster at a node's Redis or metrics port fails at once and names it",
          "[multiprocess][cli]") {
  LocalCluster c;
  UpForMessages(c, 1);
  struct Case {
    std::string port_file;
    std::string named;
  };
  for (const Case& k : {Case{"redis_port", "a Redis server (a node's Redis port?)"},
                        Case{"metrics_port", "an HTTP server (a node's metrics port?)"}}) {
    const std::string address = "127.0.0.1:" + PortOf(c, 1, k.port_file);
    // A timeout far longer than the test waits for anything: the refusal must not be a timeout.
    ProcessResult got = c.Run({"--cluster", address, "--timeout", "60000", "get", "k"});
    INFO(got.Text());
    CHECK(got.exit_code == 3);
    CHECK(Contains(got.err, address + " is not a shardkv node: " + k.named));
    CHECK_FALSE(Contains(got.err, "timed out"));
  }
}

TEST_CASE("cli messages: an interrupted load --json prints what it did, and dies of the signal",
          "[multiprocess][cli]") {
  LocalCluster c;
  UpForMessages(c, 1);
  for (int sig : {SIGINT, SIGTERM}) {
    const std::string prefix = "s" + std::to_string(sig) + ":";
    BackgroundCli load(c, {"load", "--count", "1000000", "--prefix", prefix, "--json"});
    // Interrupted once it wrote something (its first key is written first).
    const bool writing = shardkv::testing::PollUntil(
        [&] {
          return c.Run({"get", prefix + "0"}).exit_code == 0;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(50));
    REQUIRE(writing);
    load.Signal(sig);
    const std::optional<int> status = load.Wait(std::chrono::seconds(60));
    INFO("signal " << sig << "\nstdout:\n" << load.Out() << "stderr:\n" << load.Err());
    REQUIRE(status.has_value());
    CHECK(WIFSIGNALED(*status));
    CHECK(WTERMSIG(*status) == sig);
    const std::string out = load.Out();
    CHECK(Field(out, "interrupted") == "true");
    CHECK(Field(out, "outcome") == "not_applied");
    const std::string written = Field(out, "written");
    REQUIRE_FALSE(written.empty());
    CHECK(std::stoull(written) > 0);
    CHECK(std::stoull(written) < 1000000);
    CHECK(Contains(load.Err(), "interrupted by SIG"));
  }
}
