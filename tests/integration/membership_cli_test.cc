// The cluster and rebalance commands under adversarial use. Multi-process: real shardkv-node
// processes driven through the shardkv CLI (testing/cli_harness.h). Each case names the
// findings row it keeps fixed
// (../shared/findings/new-user-pass-2026-12-01.md). Clusters use --base-port 0 (ephemeral ports)
// except where a test needs one cluster to take another's port on purpose.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../tools/shardkv/cluster_limits.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::Alive;
using shardkv::testing::Contains;
using shardkv::testing::Field;
using shardkv::testing::LineCount;
using shardkv::testing::LocalCluster;
using shardkv::testing::ParseStatus;
using shardkv::testing::ProcessResult;
using shardkv::testing::ReadAll;
using shardkv::testing::ReadPid;
namespace limits = shardkv::cli::limits;
namespace fs = std::filesystem;

// The port a node wrote to D/node-ID/port.
std::string ClusterId(const LocalCluster& c) { return shardkv::testing::ClusterIdInDir(c.dir()); }

void Up(const LocalCluster& c, int nodes, std::vector<std::string> more = {}) {
  std::vector<std::string> args{"cluster", "up", "--nodes", std::to_string(nodes)};
  if (more.empty()) more = {"--base-port", "0"};
  args.insert(args.end(), more.begin(), more.end());
  REQUIRE(c.Run(args).exit_code == 0);
}

// Polls `done` every 50 ms until it holds or `limit` passes.
bool Eventually(const std::function<bool()>& done, std::chrono::seconds limit) {
  return shardkv::testing::PollUntil(done, limit, std::chrono::milliseconds(50));
}

}  // namespace

// Row 3: with cluster A stopped, cluster B takes A's port; every command of A must notice.
TEST_CASE("cli: a stopped cluster's commands refuse the cluster that took its port",
          "[hardening][cli]") {
  LocalCluster a, b;
  Up(a, 1);
  const std::string port = a.NodePort(1);
  const std::string id_a = ClusterId(a);
  REQUIRE(port != "0");
  REQUIRE(a.Run({"cluster", "down"}).exit_code == 0);
  Up(b, 1, {"--base-port", port});
  const std::string id_b = ClusterId(b);
  REQUIRE(id_a != id_b);

  ProcessResult status = a.Run({"cluster", "status", "--json"});
  CHECK(status.exit_code == 3);
  CHECK(Contains(status.err, id_a));
  CHECK(Contains(status.err, id_b));
  auto nodes = ParseStatus(status.out);
  REQUIRE(nodes.count(1) == 1);
  CHECK(nodes[1].state == "mismatch");

  ProcessResult rebalance = a.Run({"rebalance", "status"});
  CHECK(rebalance.exit_code == 3);
  CHECK(Contains(rebalance.err, id_a));
  CHECK(Contains(rebalance.err, id_b));

  ProcessResult add = a.Run({"cluster", "add-node", "--yes"});
  CHECK(add.exit_code == 3);
  CHECK(Contains(add.err, id_b));
  CHECK_FALSE(fs::exists(a.dir() + "/node-2"));

  // `up` without --nodes names the port, the node and who holds it; nothing starts.
  ProcessResult up = a.Run({"cluster", "up"});
  CHECK(up.exit_code == 2);
  CHECK(LineCount(up.err) == 1);
  CHECK(Contains(up.err, "port " + port + " of node 1 is taken by"));
  CHECK(Contains(up.err, "cluster " + id_b));
  CHECK(a.Pids().empty());

  // Once B is gone, A restarts without --nodes, as itself.
  REQUIRE(b.Run({"cluster", "down"}).exit_code == 0);
  REQUIRE(a.Run({"cluster", "up"}).exit_code == 0);
  ProcessResult again = a.Run({"cluster", "status", "--json"});
  CHECK(again.exit_code == 0);
  CHECK(Field(again.out, "cluster_id") == id_a);
  CHECK(ParseStatus(again.out)[1].state == "up");
}

// Row 7: a formed cluster tells each node its id, so a node whose data was lost cannot come back
// as an empty, healthy-looking member.
TEST_CASE("cli: nodes of a formed cluster are launched with its cluster id", "[hardening][cli]") {
  LocalCluster c;
  Up(c, 3);
  const std::string args = ReadAll(c.dir() + "/node-3/args");
  const std::string help = shardkv::testing::RunProcess({SHARDKV_NODE_PATH, "--help"}).out;
  if (!Contains(help, "--cluster-id")) {
    // An older shardkv-node comes back empty under a new cluster id: status must flag it.
    WARN("shardkv-node has no --cluster-id yet: checking that status shows the node as mismatch");
    CHECK_FALSE(Contains(args, "--cluster-id"));
    REQUIRE(c.Run({"cluster", "stop-node", "3"}).exit_code == 0);
    fs::remove_all(c.dir() + "/node-3/db");
    REQUIRE(c.Run({"cluster", "start-node", "3"}).exit_code == 0);
    ProcessResult status = c.Run({"cluster", "status", "--json"});
    CHECK(status.exit_code == 0);
    CHECK(ParseStatus(status.out)[3].state == "mismatch");
    CHECK(ParseStatus(status.out)[1].state == "up");
    CHECK(Contains(c.Run({"cluster", "status"}).out, "start-node 3 --rebuild"));
    return;
  }
  CHECK(Contains(args, "--cluster-id\n" + ClusterId(c) + "\n"));
  REQUIRE(c.Run({"cluster", "stop-node", "3"}).exit_code == 0);
  fs::remove_all(c.dir() + "/node-3/db");
  ProcessResult start = c.Run({"cluster", "start-node", "3", "--wait", "30"});
  CHECK(start.exit_code == 1);
  CHECK(Contains(start.err, "start-node 3 --rebuild"));
  // The advice, decided by the node's exit status (3: needs a rebuild), not by its log's words.
  CHECK(Contains(start.err, "node 3 has no data of this cluster; rebuild it from its replicas"));
  REQUIRE(c.Run({"cluster", "start-node", "3", "--rebuild"}).exit_code == 0);
  auto nodes = ParseStatus(c.Run({"cluster", "status", "--json"}).out);
  CHECK(nodes[3].state == "up");
}

// Row 4: a live member of another cluster is refused before anything is committed, and the
// exit code (1) agrees with the effect (nothing changed: no change at all in this cluster).
TEST_CASE("cli: join of another cluster's member is refused and changes nothing",
          "[hardening][cli]") {
  LocalCluster a, b;
  Up(a, 1);
  Up(b, 2);
  const std::string foreign = "127.0.0.1:" + b.NodePort(2);
  ProcessResult join = a.Run({"cluster", "join", foreign, "--yes"});
  CHECK(join.exit_code == 1);
  CHECK(Contains(join.err, "not a fresh node"));
  CHECK(Contains(join.err, ClusterId(b)));
  ProcessResult status = a.Run({"rebalance", "status", "--json"});
  CHECK(status.exit_code == 0);
  CHECK(Field(status.out, "state") == "none");
  // Steering with nothing to steer is refused (1), and still nothing changed.
  CHECK(a.Run({"rebalance", "cancel"}).exit_code == 1);
  CHECK(Field(a.Run({"rebalance", "status", "--json"}).out, "state") == "none");
}

// Row 34: without --yes and without a terminal, add-node refuses before starting a node.
TEST_CASE("cli: add-node without --yes off a terminal refuses before starting anything",
          "[hardening][cli]") {
  LocalCluster c;
  Up(c, 1);
  ProcessResult add = c.RunWithInput({"cluster", "add-node"}, "y\n");
  CHECK(add.exit_code == 2);
  CHECK(LineCount(add.err) == 1);
  CHECK(Contains(add.err, "--yes"));
  CHECK_FALSE(Contains(add.err, "planning"));
  CHECK_FALSE(fs::exists(c.dir() + "/node-2"));
  CHECK(c.Pids().size() == 1);
}

// Row 6: SIGINT (Ctrl-C) at the Proceed? prompt cleans up like answering `n`. The prompt needs a
// terminal on stdin, so the CLI runs with a pseudo-terminal as stdin.
TEST_CASE("cli: SIGINT at the add-node prompt stops the new node and removes its directory",
          "[hardening][cli]") {
  LocalCluster c;
  Up(c, 1);
  const int master = posix_openpt(O_RDWR | O_NOCTTY);
  REQUIRE(master >= 0);
  REQUIRE(grantpt(master) == 0);
  REQUIRE(unlockpt(master) == 0);
  const std::string slave = ptsname(master);
  const std::string err_path = c.dir() + "/cli.err";
  const pid_t cli = fork();
  REQUIRE(cli >= 0);
  if (cli == 0) {
    setsid();
    const int in = open(slave.c_str(), O_RDWR);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int out = open("/dev/null", O_WRONLY);
    if (in < 0 || err < 0 || out < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execl(SHARDKV_CLI_PATH, SHARDKV_CLI_PATH, "cluster", "add-node", "--dir", c.dir().c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const bool prompted = Eventually([&] { return Contains(ReadAll(err_path), "Proceed? [y/N]"); },
                                   std::chrono::seconds(60));
  const auto new_pid = ReadPid(c.dir() + "/node-2/pid");
  kill(cli, SIGINT);
  int wstatus = 0;
  const bool exited =
      Eventually([&] { return waitpid(cli, &wstatus, WNOHANG) == cli; }, std::chrono::seconds(40));
  if (!exited) {
    kill(cli, SIGKILL);
    waitpid(cli, &wstatus, 0);
  }
  close(master);
  UNSCOPED_INFO("CLI stderr:\n" << ReadAll(err_path));
  REQUIRE(prompted);
  REQUIRE(exited);
  CHECK(WIFSIGNALED(wstatus));
  CHECK(Contains(ReadAll(err_path), "nothing changed"));
  REQUIRE(new_pid.has_value());
  CHECK_FALSE(Alive(*new_pid));
  CHECK_FALSE(fs::exists(c.dir() + "/node-2"));
  // The next restart sees one node, as before.
  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  ProcessResult up = c.Run({"cluster", "up"});
  CHECK(up.exit_code == 0);
  CHECK(ParseStatus(c.Run({"cluster", "status", "--json"}).out).size() == 1);
}

// Row 18: --rate 0 means unthrottled and is a value, not a missing flag.
TEST_CASE("cli: rebalance throttle --rate 0 is accepted", "[hardening][cli]") {
  LocalCluster c;
  Up(c, 1);
  // Nothing to throttle: the cluster refuses (1); before the fix the CLI said "throttle needs
  // --rate and/or --streams" (2) without asking.
  ProcessResult idle = c.Run({"rebalance", "throttle", "--rate", "0"});
  CHECK(idle.exit_code == 1);
  CHECK_FALSE(Contains(idle.err, "needs --rate"));
  // During a change (throttled to 1 MB/s) it takes effect.
  REQUIRE(c.Run({"load", "--count", "3000", "--value-size", "1000"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "add-node", "--yes", "--rate", "1"}).exit_code == 0);
  ProcessResult throttle = c.Run({"rebalance", "throttle", "--rate", "0", "--json"});
  if (throttle.exit_code == 1 && Contains(throttle.err, "no change is running")) {
    WARN("the change finished before throttle ran");
  } else {
    CHECK(throttle.exit_code == 0);
    CHECK(Field(throttle.out, "rate_bytes_per_s") == "0");
  }
  CHECK(c.Run({"rebalance", "watch", "--timeout-s", "60"}).exit_code == 0);
}

// Row 20 and the 2-node default: warnings, and the last node cannot be removed (exit 2).
TEST_CASE("cli: replication warnings and removing the last node", "[hardening][cli]") {
  LocalCluster c;
  ProcessResult up = c.Run({"cluster", "up", "--nodes", "2", "--base-port", "0"});
  REQUIRE(up.exit_code == 0);
  CHECK(Contains(up.err, "tolerates no node failure"));
  ProcessResult plan = c.Run({"cluster", "remove-node", "2", "--plan-only"});
  CHECK(plan.exit_code == 0);
  CHECK(Contains(plan.err, "fewer than the configured 2"));
  CHECK(Contains(plan.err, "tolerates no node failure"));
  REQUIRE(c.Run({"cluster", "remove-node", "2", "--yes"}).exit_code == 0);
  ProcessResult watch = c.Run({"rebalance", "watch", "--timeout-s", "60"});
  INFO(watch.Text());
  REQUIRE(watch.exit_code == 0);
  // The watch retires the node that left, and says so.
  CHECK(Contains(watch.out, "node 2 left the cluster"));
  CHECK(std::filesystem::exists(c.dir() + "/node-2/removed"));
  for (const char* mode : {"--plan-only", "--yes"}) {
    ProcessResult last = c.Run({"cluster", "remove-node", "1", mode});
    CHECK(last.exit_code == 2);
    CHECK(LineCount(last.err) == 1);
    CHECK(Contains(last.err, "cannot remove the last node"));
  }
}

// Row 39: a status query that succeeded exits 0, also when no change was ever made.
TEST_CASE("cli: rebalance status with no change exits 0", "[hardening][cli]") {
  LocalCluster c;
  Up(c, 1);
  ProcessResult text = c.Run({"rebalance", "status"});
  CHECK(text.exit_code == 0);
  CHECK(Contains(text.out, "no membership change"));
  ProcessResult json = c.Run({"rebalance", "status", "--json"});
  CHECK(json.exit_code == 0);
  CHECK(Field(json.out, "state") == "none");
}

// cluster status: KEYS are counted live keys, not estimates; SHARE is the share of copies (as in
// plans): with R = N = 3 every node holds every copy, so each has exactly a third (the
// token-space share of primaries it showed before differs from node to node) and all 300 keys.
TEST_CASE("cli: cluster status counts keys and shows the share of copies", "[hardening][cli]") {
  LocalCluster c;
  Up(c, 3);
  REQUIRE(c.Run({"load", "--count", "300"}).exit_code == 0);
  ProcessResult json;
  // The third replica of a write acknowledged by two may land a moment later.
  const bool all_counted = Eventually(
      [&] {
        json = c.Run({"cluster", "status", "--json"});
        const auto nodes = ParseStatus(json.out);
        if (json.exit_code != 0 || nodes.size() != 3) return false;
        for (const auto& [id, n] : nodes) {
          if (n.keys != 300) return false;
        }
        return true;
      },
      std::chrono::seconds(30));
  INFO(json.out);
  CHECK(all_counted);
  CHECK(Contains(json.out, "\"keys_estimate\":false"));
  for (const auto& [id, n] : ParseStatus(json.out)) {
    CHECK(n.state == "up");
    CHECK(n.share_pct == Approx(100.0 / 3).margin(0.01));
  }
  ProcessResult table = c.Run({"cluster", "status"});
  CHECK(Contains(table.out, "        300  "));
  CHECK_FALSE(Contains(table.out, "~300"));
  CHECK(Contains(table.out, "33.3%"));
}

// Help texts stand on their own and agree on the exit codes.
TEST_CASE("cli: cluster help texts are current and self-contained", "[hardening][cli]") {
  LocalCluster c;
  ProcessResult start = c.Run({"cluster", "start-node", "--help"});
  CHECK(start.exit_code == 0);
  CHECK_FALSE(Contains(start.out, "not implemented"));
  ProcessResult status = c.Run({"cluster", "status", "--help"});
  CHECK(status.exit_code == 0);
  CHECK_FALSE(Contains(status.out, ".h)"));
  CHECK(Contains(status.out, "keys_estimate"));
  CHECK(Contains(status.out, "mismatch"));
  ProcessResult cluster = c.Run({"cluster", "--help"});
  CHECK_FALSE(Contains(cluster.out, "2 usage or refused"));
  CHECK(Contains(cluster.out, "2 usage or bad input"));
}

// Every numeric flag just past its range: one error line, exit 2, nothing started.
TEST_CASE("cli: numeric flags past their limits are one-line usage errors", "[hardening][cli]") {
  LocalCluster c;
  auto past = [](auto max) { return std::to_string(max + 1); };
  const std::vector<std::vector<std::string>> cases{
      {"cluster", "up", "--nodes", past(limits::kMaxNodes)},
      {"cluster", "up", "--nodes", "3", "--replicas", past(limits::kMaxNodes)},
      {"cluster", "up", "--nodes", "3", "--write-quorum", past(limits::kMaxNodes)},
      {"cluster", "up", "--nodes", "3", "--read-quorum", past(limits::kMaxNodes)},
      {"cluster", "up", "--nodes", "3", "--vnodes", past(limits::kMaxVnodes)},
      {"cluster", "up", "--nodes", "3", "--shards", past(limits::kMaxShards)},
      {"cluster", "up", "--nodes", "3", "--base-port", past(limits::kMaxBasePort)},
      {"cluster", "up", "--nodes", "3", "--wait", past(limits::kMaxWaitS)},
      {"cluster", "stop-node", past(limits::kMaxNodeId)},
      {"cluster", "stop-node", "1", "--wait", past(limits::kMaxWaitS)},
      {"cluster", "start-node", past(limits::kMaxNodeId)},
      {"cluster", "down", "--wait", past(limits::kMaxWaitS)},
      {"cluster", "add-node", "--weight", "1000.5"},
      {"cluster", "add-node", "--rate", past(limits::kMaxRateMb)},
      {"cluster", "add-node", "--streams", past(limits::kMaxStreams)},
      {"cluster", "add-node", "--wait", past(limits::kMaxWaitS)},
      {"cluster", "remove-node", past(limits::kMaxNodeId)},
      {"cluster", "set", "--replicas", past(limits::kMaxNodes)},
      {"cluster", "set", "--write-quorum", past(limits::kMaxNodes)},
      {"cluster", "set", "--read-quorum", "0"},
      {"cluster", "set", "--replicas", "2", "--rate", past(limits::kMaxRateMb)},
      {"rebalance", "watch", "--interval", past(limits::kMaxWatchIntervalMs)},
      {"rebalance", "watch", "--timeout-s", past(limits::kMaxWatchTimeoutS)},
      {"rebalance", "throttle", "--rate", past(limits::kMaxRateMb)},
      {"rebalance", "throttle", "--streams", past(limits::kMaxStreams)},
  };
  for (const auto& args : cases) {
    ProcessResult r = c.Run(args);
    CHECK(r.exit_code == 2);
    CHECK(LineCount(r.err) == 1);
    CHECK(r.err.rfind("error: ", 0) == 0);
  }
  CHECK(c.Pids().empty());
  CHECK_FALSE(fs::exists(c.dir() + "/cluster.conf"));
}

// Row 6, SIGPIPE: a CLI whose stdout is a closed pipe (`... | head -0`) cleans up the node it
// started when printing the plan hits the closed pipe, instead of dying with the node leaked.
TEST_CASE("cli: SIGPIPE while add-node prints its plan stops the new node", "[hardening][cli]") {
  LocalCluster c;
  Up(c, 1);
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  close(fds[0]);  // nobody reads: the first write raises SIGPIPE
  const std::string err_path = c.dir() + "/cli.err";
  const pid_t cli = fork();
  REQUIRE(cli >= 0);
  if (cli == 0) {
    signal(SIGPIPE, SIG_DFL);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0) _exit(127);
    dup2(fds[1], 1);
    dup2(err, 2);
    execl(SHARDKV_CLI_PATH, SHARDKV_CLI_PATH, "cluster", "add-node", "--yes", "--dir",
          c.dir().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  int wstatus = 0;
  const bool exited =
      Eventually([&] { return waitpid(cli, &wstatus, WNOHANG) == cli; }, std::chrono::seconds(60));
  if (!exited) {
    kill(cli, SIGKILL);
    waitpid(cli, &wstatus, 0);
  }
  UNSCOPED_INFO("CLI stderr:\n" << ReadAll(err_path));
  REQUIRE(exited);
  CHECK(WIFSIGNALED(wstatus));
  CHECK_FALSE(fs::exists(c.dir() + "/node-2"));
  CHECK(c.Pids().size() == 1);
  CHECK(Field(c.Run({"rebalance", "status", "--json"}).out, "state") == "none");
}
