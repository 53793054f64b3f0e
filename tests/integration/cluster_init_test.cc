// `shardkv cluster init` against real shardkv-node processes started on their own (port 0, no
// `cluster up`, no cluster directory): forming three fresh nodes, put/get through --cluster, and
// every refusal, each shown to have changed nothing on the nodes.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "integration/background_process.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace {

using shardkv::testing::Contains;

using shardkv::testing::BackgroundProcess;
using shardkv::testing::ProcessResult;

// Fresh nodes with the given ids, each in its own data directory, listening on port 0.
class Nodes {
 public:
  explicit Nodes(const std::vector<int>& ids) {
    for (int id : ids) Add(id);
  }
  void Add(int id) {
    const std::string data = dir_.Sub("node-" + std::to_string(addresses_.size()));
    procs_.push_back(std::make_unique<BackgroundProcess>(
        std::vector<std::string>{SHARDKV_NODE_PATH, "--id", std::to_string(id), "--data", data,
                                 "--listen", "127.0.0.1:0"},
        data + ".log"));
    const std::string address = shardkv::testing::WaitForPortFile(data, std::chrono::seconds(30));
    REQUIRE_FALSE(address.empty());
    addresses_.push_back(address);
  }
  const std::string& operator[](size_t i) const { return addresses_[i]; }
  std::string List(std::vector<size_t> which) const {
    std::string out;
    for (size_t i : which) out += (out.empty() ? "" : ",") + addresses_[i];
    return out;
  }
  // `shardkv ARGS...` with a cluster directory that does not exist: nothing local is used.
  ProcessResult Run(std::vector<std::string> args) const {
    args.insert(args.begin(), SHARDKV_CLI_PATH);
    args.push_back("--dir");
    args.push_back(dir_.Sub("no-such-dir"));
    ProcessResult r = shardkv::testing::RunProcess(args, std::chrono::seconds(60));
    UNSCOPED_INFO(r.Text());
    return r;
  }
  // What the node holds: "<cluster>@<epoch>/<nodes>", or "no map".
  std::string Held(size_t i) const {
    auto m = shardkv::testing::NodeMap(addresses_[i]);
    if (!m) return "no map";
    return std::to_string(m->cluster_id()) + "@" + std::to_string(m->epoch()) + "/" +
           std::to_string(m->nodes().size());
  }

 private:
  shardkv::testing::TempDir dir_;
  std::vector<std::unique_ptr<BackgroundProcess>> procs_;
  std::vector<std::string> addresses_;
};

}  // namespace

TEST_CASE("cluster init forms three fresh nodes, then put and get through --cluster",
          "[multiprocess]") {
  Nodes n({1, 2, 3});
  const std::string all = n.List({0, 1, 2});
  const std::vector<std::string> before = {n.Held(0), n.Held(1), n.Held(2)};

  // Off a terminal and without --yes: refused before any node is contacted.
  ProcessResult r = n.Run({"cluster", "init", all});
  CHECK(r.exit_code == 2);
  CHECK(Contains(r.err, "pass --yes"));
  for (size_t i = 0; i < 3; ++i) CHECK(n.Held(i) == before[i]);

  r = n.Run({"cluster", "init", all, "--yes", "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(shardkv::testing::LineCount(r.out) == 1);  // one JSON object: the status
  CHECK(Contains(r.out, "\"epoch\":1"));
  CHECK(Contains(r.out, "\"replicas\":3,\"write_quorum\":2,\"read_quorum\":2"));
  CHECK(Contains(r.err, "a new cluster of 3 node(s)"));  // the table of it went to stderr
  const std::string formed = n.Held(0);
  CHECK(Contains(formed, "@1/3"));
  CHECK(n.Held(1) == formed);
  CHECK(n.Held(2) == formed);

  REQUIRE(n.Run({"put", "--cluster", all, "user:1", "alice"}).exit_code == 0);
  r = n.Run({"get", "--cluster", n[2], "user:1"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "alice");

  // The same nodes again: they belong to a cluster now.
  r = n.Run({"cluster", "init", all, "--yes"});
  CHECK(r.exit_code == 1);
  CHECK(Contains(r.err, "already belongs to cluster"));
  CHECK(Contains(r.err, "nothing changed"));
  CHECK(n.Held(0) == formed);
}

TEST_CASE("cluster init refuses before changing anything", "[multiprocess]") {
  Nodes n({1, 2});

  SECTION("a node of an existing cluster") {
    n.Add(3);
    n.Add(4);
    REQUIRE(n.Run({"cluster", "init", n.List({2, 3}), "--yes"}).exit_code == 0);
    const std::string fresh = n.Held(0);
    ProcessResult r = n.Run({"cluster", "init", n.List({0, 1, 2}), "--yes"});
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.err, n[2] + " (node 3) already belongs to cluster"));
    CHECK(Contains(r.out, "REFUSED"));
    CHECK(n.Held(0) == fresh);
  }

  SECTION("a one-node cluster that holds data") {
    // Fresh nodes are unformed and take no data: node 3 first serves alone (as a 0.1.0
    // standalone node did), then holds a key. It is refused as a member; an unformed node with
    // keys is refused as "holds data" (tests/admin/admin_form_test.cc classifies both).
    n.Add(3);
    REQUIRE(shardkv::testing::FormAlone(n[2], 3).ok());
    REQUIRE(n.Run({"put", "--cluster", n[2], "k", "v"}).exit_code == 0);
    const std::string fresh = n.Held(0);
    ProcessResult r = n.Run({"cluster", "init", n.List({0, 1, 2}), "--yes"});
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.err, n[2] + " (node 3) already belongs to cluster"));
    CHECK(n.Held(0) == fresh);
  }

  SECTION("an unreachable address") {
    const std::string fresh = n.Held(0);
    ProcessResult r = n.Run({"cluster", "init", n.List({0, 1}) + ",127.0.0.1:1", "--yes"});
    CHECK(r.exit_code == 3);
    CHECK(Contains(r.err, "127.0.0.1:1 did not answer"));
    CHECK(n.Held(0) == fresh);
  }

  SECTION("two nodes with one id") {
    n.Add(2);
    const std::string fresh = n.Held(0);
    ProcessResult r = n.Run({"cluster", "init", n.List({0, 1, 2}), "--yes"});
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.err, "both report node id 2"));
    CHECK(n.Held(0) == fresh);
  }

  SECTION("bad input: an address twice, R above N, a quorum above R") {
    const std::string fresh = n.Held(0);
    ProcessResult r = n.Run({"cluster", "init", n.List({0, 1, 0}), "--yes"});
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "is given twice"));
    r = n.Run({"cluster", "init", n.List({0, 1}), "--replicas", "3", "--yes"});
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "--replicas 3 exceeds the 2 node(s) given"));
    r = n.Run({"cluster", "init", n.List({0, 1}), "--write-quorum", "3", "--yes"});
    CHECK(r.exit_code == 2);
    CHECK(n.Held(0) == fresh);
  }

  SECTION("without --yes off a terminal it refuses, and two nodes warn") {
    ProcessResult r = shardkv::testing::RunProcessWithInput(
        {SHARDKV_CLI_PATH, "cluster", "init", n.List({0, 1})}, "yes\n");
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "stdin is not a terminal"));
    r = n.Run({"cluster", "init", n.List({0, 1}), "--yes"});
    CHECK(r.exit_code == 0);
    CHECK(Contains(r.err, "tolerates no node failure"));
    CHECK(Contains(r.out, "replicas 2, write quorum 2, read quorum 2"));
  }
}

// Step 3 of issue 11: commands that start no local process work with --cluster alone, the
// local-process ones refuse it, and status shows what each node reports about itself.
TEST_CASE("remote commands with --cluster and no cluster directory", "[multiprocess]") {
  Nodes n({1, 2, 3});
  const std::string all = n.List({0, 1, 2});

  // Before init: the nodes are shown (each standalone or unformed), none as down.
  ProcessResult r = n.Run({"cluster", "status", "--cluster", all, "--json"});
  // Standalone nodes are each a cluster (exit 0); unformed ones are of none (exit 3).
  CHECK((r.exit_code == 0 || Contains(r.out, "\"state\":\"unformed\"")));
  CHECK_FALSE(Contains(r.out, "\"state\":\"down\""));
  CHECK(Contains(r.out, "\"version\":\"" SHARDKV_VERSION "\""));

  REQUIRE(n.Run({"cluster", "init", all, "--yes"}).exit_code == 0);
  r = n.Run({"load", "--cluster", all, "--count", "200", "--prefix", "r"});
  REQUIRE(r.exit_code == 0);
  r = n.Run({"verify", "--cluster", n[1], "--count", "200", "--prefix", "r"});
  CHECK(r.exit_code == 0);
  r = n.Run({"stats", "--cluster", all, "--json"});
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.out, "wall_clock_ms"));
  r = n.Run({"rebalance", "status", "--cluster", all});
  CHECK(r.exit_code == 0);

  r = n.Run({"cluster", "status", "--cluster", n[0], "--json"});
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.out, "\"map_from\":\"" + n[0] + "\""));
  const auto nodes = shardkv::testing::ParseStatus(r.out);
  REQUIRE(nodes.size() == 3);
  std::string digest;
  const size_t first = r.out.find("\"nodes\":[");
  for (int id = 1; id <= 3; ++id) {
    const size_t at = r.out.find("{\"id\":" + std::to_string(id) + ",", first);
    REQUIRE(at != std::string::npos);
    const std::string node = r.out.substr(at, r.out.find('}', at) - at + 1);
    INFO(node);
    CHECK(shardkv::testing::Field(node, "state") == "up");
    CHECK(shardkv::testing::Field(node, "node_state") == "up");
    CHECK(shardkv::testing::Field(node, "epoch") == "1");
    CHECK(shardkv::testing::Field(node, "advertised_address") ==
          shardkv::testing::Field(node, "address"));
    CHECK(shardkv::testing::Field(node, "pid") == "null");  // no local directory read
    const std::string d = shardkv::testing::Field(node, "map_digest");
    CHECK(d.size() == 16);
    if (digest.empty()) digest = d;
    CHECK(d == digest);  // one map everywhere
    // One host, one clock: the offset is 0 within its stated error bound.
    const long offset = std::stol(shardkv::testing::Field(node, "clock_offset_ms"));
    const long error = std::stol(shardkv::testing::Field(node, "clock_offset_error_ms"));
    CHECK(error >= 1);
    CHECK(std::labs(offset) <= error);
    CHECK(std::stol(shardkv::testing::Field(node, "uptime_s")) >= 0);
  }

  // A fourth fresh node joins through --cluster; status shows it while it is unformed or
  // standalone, then as a member.
  n.Add(4);
  r = n.Run({"cluster", "status", "--cluster", all + "," + n[3], "--json"});
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.out, "{\"id\":4,\"address\":\"" + n[3] + "\""));
  r = n.Run({"cluster", "join", n[3], "--cluster", all, "--yes"});
  REQUIRE(r.exit_code == 0);
  r = n.Run({"rebalance", "watch", "--cluster", all, "--timeout-s", "120"});
  CHECK(r.exit_code == 0);
  r = n.Run({"get", "--cluster", n[3], "r7"});
  CHECK(r.exit_code == 0);

  // The local-process commands refuse --cluster instead of ignoring it.
  for (std::vector<std::string> local :
       std::vector<std::vector<std::string>>{{"cluster", "up", "--nodes", "3"},
                                             {"cluster", "down"},
                                             {"cluster", "stop-node", "1"},
                                             {"cluster", "start-node", "1"},
                                             {"cluster", "add-node", "--yes"}}) {
    local.push_back("--cluster");
    local.push_back(all);
    r = n.Run(local);
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "takes no --cluster"));
  }
}
