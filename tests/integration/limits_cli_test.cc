// Every numeric flag of every command, from the one table of limits the CLI's own checks use
// (tools/shardkv/kv_limits.h, cluster_limits.h, the lab's and the node's constants): at its
// maximum the command works end to end, at maximum + 1 it is refused by the parser with one
// `error:` line and exit 2, before anything starts. The table of ranges in docs/operations.md
// ("Limits") is checked against the same rows, so the documented ranges cannot drift from the
// enforced ones.
//
// A flag whose maximum would not finish within a minute on a 2-core machine has a lower cap; the
// rows say so. Each scenario is bounded by the CLI's own deadlines (--wait, --timeout-s).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cluster_limits.h"
#include "integration/background_process.h"
#include "kv_limits.h"
#include "placement_lab/comparison.h"
#include "placement_lab/key_set.h"
#include "placement_lab/lab_membership.h"
#include "shardkv/options.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::BackgroundProcess;
using shardkv::testing::LineCount;
using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;
namespace lim = shardkv::cli::limits;

template <typename T>
std::string S(T v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// One row of the table: how docs/operations.md names the flag, its range, and argv (after
// `shardkv`) with a value just above the maximum.
struct LimitRow {
  std::string label;  // "`cluster up --nodes`"
  std::string min, max;
  std::vector<std::string> over;
};

const std::vector<LimitRow>& Rows() {
  static const std::vector<LimitRow> rows = {
      {"`--timeout` (ms, global)",
       S(lim::kMinTimeoutMs),
       S(lim::kMaxTimeoutMs),
       {"get", "k", "--timeout", S(lim::kMaxTimeoutMs + 1ull)}},
      {"`load`/`verify --count`",
       S(lim::kMinCount),
       S(lim::kMaxCount),
       {"load", "--count", S(lim::kMaxCount + 1)}},
      {"`load`/`verify --value-size` (bytes)",
       "0",
       S(lim::kMaxValueSize),
       {"verify", "--value-size", S(lim::kMaxValueSize + 1)}},
      {"`load`/`verify --concurrency`",
       S(lim::kMinConcurrency),
       S(lim::kMaxConcurrency),
       {"load", "--concurrency", S(lim::kMaxConcurrency + 1)}},
      {"`load`/`verify --max-errors` (0 = never stop)",
       "0",
       S(lim::kMaxMaxErrors),
       {"load", "--max-errors", S(lim::kMaxMaxErrors + 1)}},
      {"`cluster up --nodes`",
       S(lim::kMinNodes),
       S(lim::kMaxNodes),
       {"cluster", "up", "--nodes", S(lim::kMaxNodes + 1)}},
      {"`cluster up --replicas`/`--write-quorum`/`--read-quorum`",
       "1",
       S(lim::kMaxNodes),
       {"cluster", "up", "--nodes", "3", "--replicas", S(lim::kMaxNodes + 1)}},
      {"`cluster set --replicas`/`--write-quorum`/`--read-quorum`",
       "1",
       S(lim::kMaxNodes),
       {"cluster", "set", "--replicas", S(lim::kMaxNodes + 1)}},
      {"`cluster up --vnodes`",
       S(lim::kMinVnodes),
       S(lim::kMaxVnodes),
       {"cluster", "up", "--nodes", "3", "--vnodes", S(lim::kMaxVnodes + 1)}},
      {"`cluster up --shards`",
       S(lim::kMinShards),
       S(lim::kMaxShards),
       {"cluster", "up", "--nodes", "3", "--mode", "jump", "--shards", S(lim::kMaxShards + 1)}},
      {"`cluster up --base-port` (0 = any free port)",
       S(lim::kMinBasePort),
       S(lim::kMaxBasePort),
       {"cluster", "up", "--nodes", "1", "--base-port", S(lim::kMaxBasePort + 1)}},
      {"`cluster up --tombstone-grace` (s)",
       S(lim::kMinTombstoneGraceS),
       S(lim::kMaxTombstoneGraceS),
       {"cluster", "up", "--nodes", "1", "--tombstone-grace", S(lim::kMaxTombstoneGraceS + 1)}},
      {"`--wait` (s: `cluster up`, `start-node`, `stop-node`, `down`, `add-node`)",
       S(lim::kMinWaitS),
       S(lim::kMaxWaitS),
       {"cluster", "down", "--wait", S(lim::kMaxWaitS + 1)}},
      {"node `ID` (`stop-node`, `start-node`, `remove-node`)",
       S(lim::kMinNodeId),
       S(lim::kMaxNodeId),
       {"cluster", "stop-node", S(lim::kMaxNodeId + 1ull)}},
      {"`add-node`/`join --weight`",
       S(lim::kMinWeight),
       S(lim::kMaxWeight),
       {"cluster", "add-node", "--plan-only", "--weight", S(lim::kMaxWeight + 1)}},
      {"`--rate` (MB/s; 0 = unthrottled)",
       S(lim::kMinRateMb),
       S(lim::kMaxRateMb),
       {"rebalance", "throttle", "--rate", S(lim::kMaxRateMb + 1ull)}},
      {"`--streams`",
       S(lim::kMinStreams),
       S(lim::kMaxStreams),
       {"cluster", "remove-node", "2", "--plan-only", "--streams", S(lim::kMaxStreams + 1)}},
      {"`rebalance watch --interval` (ms)",
       S(lim::kMinWatchIntervalMs),
       S(lim::kMaxWatchIntervalMs),
       {"rebalance", "watch", "--interval", S(lim::kMaxWatchIntervalMs + 1)}},
      {"`rebalance watch --timeout-s`",
       S(lim::kMinWatchTimeoutS),
       S(lim::kMaxWatchTimeoutS),
       {"rebalance", "watch", "--timeout-s", S(lim::kMaxWatchTimeoutS + 1)}},
      {"`placement compare --nodes`",
       "1",
       S(shardkv::lab::MembershipSpec::kMaxNodes),
       {"placement", "compare", "--nodes", S(shardkv::lab::MembershipSpec::kMaxNodes + 1)}},
      {"`placement compare --keys`",
       "1",
       S(shardkv::lab::KeySet::kMaxKeys),
       {"placement", "compare", "--keys", S(shardkv::lab::KeySet::kMaxKeys + 1)}},
      {"`placement compare --vnodes`",
       "1",
       S(shardkv::lab::CompareOptions::kMaxVnodes),
       {"placement", "compare", "--vnodes", S(shardkv::lab::CompareOptions::kMaxVnodes + 1)}},
      {"`placement compare --maglev-table`",
       "1",
       S(shardkv::lab::CompareOptions::kMaxMaglevTable),
       {"placement", "compare", "--maglev-table",
        S(shardkv::lab::CompareOptions::kMaxMaglevTable + 1)}},
      {"`placement compare --weights`/`--add-weight`",
       "> 0",
       S(shardkv::lab::MembershipSpec::kMaxWeight),
       {"placement", "compare", "--add-weight", S(shardkv::lab::MembershipSpec::kMaxWeight + 1)}},
  };
  return rows;
}

// shardkv-node's own flags (run without the CLI).
struct NodeRow {
  std::string label;
  std::string min, max;
  std::string flag, over;
};

const std::vector<NodeRow>& NodeRows() {
  static const std::vector<NodeRow> rows = {
      {"`shardkv-node --id`", "1", S(shardkv::kMaxNodeId), "--id", S(shardkv::kMaxNodeId + 1ull)},
      {"`shardkv-node --threads`", "1", S(shardkv::kMaxIoThreads), "--threads",
       S(shardkv::kMaxIoThreads + 1)},
      {"`shardkv-node --max-key-bytes`", "1", S(shardkv::kMaxKeyBytesLimit), "--max-key-bytes",
       S(shardkv::kMaxKeyBytesLimit + 1)},
      {"`shardkv-node --max-value-bytes`", "1", S(shardkv::kMaxValueBytesLimit),
       "--max-value-bytes", S(shardkv::kMaxValueBytesLimit + 1)},
      {"`shardkv-node --tombstone-grace` (s)", "1", S(shardkv::kMaxTombstoneGraceSeconds),
       "--tombstone-grace", S(shardkv::kMaxTombstoneGraceSeconds + 1)},
      {"`shardkv-node --repair-period` (ms)", S(shardkv::kMinRepairPeriodMs),
       S(shardkv::kMaxRepairPeriodMs), "--repair-period", S(shardkv::kMaxRepairPeriodMs + 1)},
      {"`shardkv-node --repair-rate` (keys/s)", "1", S(shardkv::kMaxRepairRate), "--repair-rate",
       S(shardkv::kMaxRepairRate + 1)},
  };
  return rows;
}

void RequireUsageError(const ProcessResult& r) {
  CHECK(r.exit_code == 2);
  CHECK(LineCount(r.err) == 1);
  CHECK(r.err.rfind("error: ", 0) == 0);
  CHECK(r.out.empty());
}

std::string MakeTempDir(const char* tag) {
  std::string pattern = "/tmp/shardkv-limits-" + std::string(tag) + "-XXXXXX";
  const char* made = mkdtemp(pattern.data());
  REQUIRE(made != nullptr);
  return made;
}

// Adds a node (flags at their maxima where given), waits for the change to finish, verifies.
void AddNodeAndVerify(const LocalCluster& c, std::vector<std::string> extra, int keys) {
  std::vector<std::string> add = {"cluster", "add-node", "--yes"};
  add.insert(add.end(), extra.begin(), extra.end());
  REQUIRE(c.Run(add).exit_code == 0);
  REQUIRE(c.Run({"rebalance", "watch", "--timeout-s", "60"}).exit_code == 0);
  REQUIRE(c.Run({"verify", "--count", S(keys)}).exit_code == 0);
}

}  // namespace

TEST_CASE("limits: every flag at maximum + 1 is refused with one error line and exit 2",
          "[multiprocess][limits]") {
  // No cluster runs: a refused value must not need one (nothing is started or sent).
  LocalCluster c;
  for (const LimitRow& row : Rows()) {
    INFO(row.label);
    RequireUsageError(c.Run(row.over));
  }
  CHECK(c.Pids().empty());
  const std::string data = MakeTempDir("node");
  for (const NodeRow& row : NodeRows()) {
    INFO(row.label);
    RequireUsageError(
        RunProcess({SHARDKV_NODE_PATH, "--id", "1", "--data", data, row.flag, row.over}));
  }
  std::filesystem::remove_all(data);
}

TEST_CASE("limits: the documented table of ranges is the enforced one", "[limits]") {
  std::ifstream in(std::string(SHARDKV_SOURCE_DIR) + "/docs/operations.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string page = text.str();
  auto check = [&](const std::string& label, const std::string& min, const std::string& max) {
    const std::string line = "| " + label + " | " + min + " | " + max + " |";
    INFO("docs/operations.md lacks the row: " << line);
    CHECK(page.find(line) != std::string::npos);
  };
  for (const LimitRow& row : Rows()) check(row.label, row.min, row.max);
  for (const NodeRow& row : NodeRows()) check(row.label, row.min, row.max);
}

TEST_CASE("limits: key-value flags at their maxima work end to end", "[multiprocess][limits]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "1", "--base-port", "0", "--wait", S(lim::kMaxWaitS),
                 "--tombstone-grace", S(lim::kMaxTombstoneGraceS)})
              .exit_code == 0);
  const std::string max_count = S(lim::kMaxCount);
  CHECK(c.Run({"put", "k", "v", "--timeout", S(lim::kMaxTimeoutMs)}).exit_code == 0);
  CHECK(c.Run({"load", "--count", max_count, "--value-size", "0", "--concurrency", "256"})
            .exit_code == 0);
  CHECK(c.Run({"verify", "--count", max_count, "--value-size", "0", "--concurrency", "256"})
            .exit_code == 0);
  // The biggest value a node accepts, a few times.
  CHECK(c.Run({"load", "--count", "4", "--prefix", "big:", "--value-size", S(lim::kMaxValueSize),
               "--concurrency", "4"})
            .exit_code == 0);
  CHECK(c.Run({"verify", "--count", "4", "--prefix", "big:", "--value-size", S(lim::kMaxValueSize),
               "--concurrency", "4"})
            .exit_code == 0);
  CHECK(c.Run({"load", "--count", "8192", "--prefix", "wide:", "--value-size", "16",
               "--concurrency", S(lim::kMaxConcurrency), "--max-errors", S(lim::kMaxMaxErrors)})
            .exit_code == 0);
  CHECK(c.Run({"verify", "--count", "8192", "--prefix", "wide:", "--value-size", "16",
               "--concurrency", S(lim::kMaxConcurrency), "--max-errors", S(lim::kMaxMaxErrors)})
            .exit_code == 0);
  // Node ids and waits at their maxima: an id that is no member is a clear refusal.
  ProcessResult no_node = c.Run({"cluster", "stop-node", S(lim::kMaxNodeId)});
  CHECK(no_node.exit_code == 2);
  CHECK(LineCount(no_node.err) == 1);
  CHECK(c.Run({"cluster", "stop-node", "1", "--wait", S(lim::kMaxWaitS)}).exit_code == 0);
  CHECK(c.Run({"cluster", "start-node", "1", "--wait", S(lim::kMaxWaitS)}).exit_code == 0);
  CHECK(c.Run({"get", "k"}).out == "v");
  CHECK(c.Run({"cluster", "down", "--wait", S(lim::kMaxWaitS)}).exit_code == 0);
}

TEST_CASE("limits: cluster up at the maximum node count and replicas and quorums",
          "[multiprocess][limits]") {
  LocalCluster c;
  const std::string n = S(lim::kMaxNodes);
  REQUIRE(c.Run({"cluster", "up", "--nodes", n, "--replicas", n, "--write-quorum", n,
                 "--read-quorum", n, "--base-port", "0", "--wait", "60"})
              .exit_code == 0);
  CHECK(c.Pids().size() == lim::kMaxNodes);
  REQUIRE(c.Run({"put", "k", "v"}).exit_code == 0);
  CHECK(c.Run({"get", "k"}).out == "v");
}

TEST_CASE("limits: the highest base port", "[multiprocess][limits]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "1", "--base-port", S(lim::kMaxBasePort)}).exit_code ==
          0);
  CHECK(c.Run({"put", "k", "v"}).exit_code == 0);
}

TEST_CASE(
    "limits: ring mode at the maximum vnodes scales out with membership flags at their maxima",
    "[multiprocess][limits]") {
  LocalCluster c;
  REQUIRE(
      c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--vnodes", S(lim::kMaxVnodes)})
          .exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "3000"}).exit_code == 0);
  AddNodeAndVerify(
      c,
      {"--rate", S(lim::kMaxRateMb), "--streams", S(lim::kMaxStreams), "--wait", S(lim::kMaxWaitS)},
      3000);
  // A done change: the slowest poll interval still returns at once.
  CHECK(c.Run({"rebalance", "watch", "--interval", S(lim::kMaxWatchIntervalMs), "--timeout-s",
               S(lim::kMaxWatchTimeoutS)})
            .exit_code == 0);
  // A slow remove, switched to the fastest setting while it streams.
  REQUIRE(c.Run({"cluster", "remove-node", "4", "--yes", "--rate", "1"}).exit_code == 0);
  ProcessResult throttle = c.Run(
      {"rebalance", "throttle", "--rate", S(lim::kMaxRateMb), "--streams", S(lim::kMaxStreams)});
  // It may have finished before the throttle arrived; then "no change is running" (exit 1).
  CHECK((throttle.exit_code == 0 || throttle.exit_code == 1));
  REQUIRE(c.Run({"rebalance", "watch", "--timeout-s", "60"}).exit_code == 0);
  CHECK(c.Run({"verify", "--count", "3000"}).exit_code == 0);
}

TEST_CASE("limits: jump mode at the maximum shard count scales out", "[multiprocess][limits]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--mode", "jump", "--shards",
                 S(lim::kMaxShards)})
              .exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "3000"}).exit_code == 0);
  AddNodeAndVerify(c, {}, 3000);
}

TEST_CASE("limits: the heaviest node weight scales out", "[multiprocess][limits]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0"}).exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "3000"}).exit_code == 0);
  AddNodeAndVerify(c, {"--weight", S(lim::kMaxWeight)}, 3000);
}

TEST_CASE("limits: the placement lab at each maximum", "[multiprocess][limits]") {
  using shardkv::lab::CompareOptions;
  using shardkv::lab::KeySet;
  using shardkv::lab::MembershipSpec;
  const std::string shardkv = SHARDKV_CLI_PATH;
  std::string weights = S(MembershipSpec::kMaxWeight);
  for (int i = 1; i < MembershipSpec::kDefaultNodes; ++i) weights += ",1";
  const std::vector<std::vector<std::string>> runs = {
      // The default Maglev table (65537) fits 100 x (nodes + 1) at the maximum node count.
      {"--nodes", S(MembershipSpec::kMaxNodes)},
      {"--keys", S(KeySet::kMaxKeys)},
      {"--vnodes", S(CompareOptions::kMaxVnodes)},
      {"--maglev-table", S(CompareOptions::kMaxMaglevTable)},
      {"--weights", weights},
      {"--add-weight", S(MembershipSpec::kMaxWeight)},
  };
  for (auto args : runs) {
    args.insert(args.begin(), {shardkv, "placement", "compare", "--json"});
    ProcessResult r = RunProcess(args);
    INFO(args[4] << " " << args[5] << " -> exit " << r.exit_code << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.out.find("\"results\"") != std::string::npos);
  }
}

TEST_CASE("limits: shardkv-node with every flag at its maximum", "[multiprocess][limits]") {
  const std::string data = MakeTempDir("node-max");
  const std::string id = S(shardkv::kMaxNodeId);
  const std::string threads = S(shardkv::kMaxIoThreads);
  const std::string key = S(shardkv::kMaxKeyBytesLimit);
  const std::string value = S(shardkv::kMaxValueBytesLimit);
  const std::string grace = S(shardkv::kMaxTombstoneGraceSeconds);
  {
    BackgroundProcess node({SHARDKV_NODE_PATH, "--id", id, "--threads", threads, "--max-key-bytes",
                            key, "--max-value-bytes", value, "--tombstone-grace", grace, "--data",
                            data, "--log-level", "warn"},
                           "/dev/null");
    REQUIRE(node.pid() > 0);
    // Serving once it wrote its port; then SIGTERM stops it cleanly.
    CHECK_FALSE(shardkv::testing::WaitForPortFile(data, std::chrono::seconds(30)).empty());
    node.Signal(SIGTERM);
    const int exit_code = node.Wait(std::chrono::seconds(15));
    if (node.running()) FAIL("shardkv-node ignored SIGTERM for 15 s");  // its destructor kills it
    CHECK(exit_code == 0);
  }
  std::filesystem::remove_all(data);
}
