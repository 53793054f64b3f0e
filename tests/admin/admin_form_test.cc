// Admin::FormCluster's refusals (include/shardkv/admin.h): every node is probed before any
// install, and a node that does not answer, belongs to a cluster, holds data, reports another
// id, or is listed twice stops the whole formation with nothing installed anywhere. Also
// FormableNode's classification of probes, including the unformed-node contract (a `formed`
// counter of 0, no map) that nodes of this release do not produce yet.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"
#include "testing/standalone_node.h"

using namespace shardkv;
using shardkv::testing::AdminFor;
using shardkv::testing::InProcessCluster;

namespace {

ClusterParams FormSmallRing() {
  ClusterParams p;
  p.mode = PlacementMode::kRing;
  p.vnodes = 16;
  return p;
}

// What a node holds, to show that a refused formation left it as it was: its map's cluster id,
// epoch and node count, or "no map".
std::string Held(const std::string& address) {
  auto m = testing::NodeMap(address);
  if (!m) return "no map";
  return std::to_string(m->cluster_id()) + "@" + std::to_string(m->epoch()) + "/" +
         std::to_string(m->nodes().size());
}

// `n` fresh standalone nodes (ids 1..n) and what each holds now.
struct Fresh {
  explicit Fresh(int n) : c(0, FormSmallRing()) {
    for (int i = 0; i < n; ++i) REQUIRE(c.AddStandaloneNode().ok());
    for (uint32_t id = 1; id <= c.size(); ++id) before.push_back(Held(c.Address(id)));
  }
  std::vector<ClusterNode> Nodes() const {
    std::vector<ClusterNode> out;
    for (uint32_t id = 1; id <= c.size(); ++id) {
      out.push_back({id, c.Address(id), 1.0, NodeState::kUp});
    }
    return out;
  }
  void RequireUntouched() const {
    for (uint32_t id = 1; id <= c.size(); ++id) {
      INFO("node " << id);
      CHECK(Held(c.Address(id)) == before[id - 1]);
    }
  }
  InProcessCluster c;
  std::vector<std::string> before;
};

NodeProbe Answering(uint32_t id, std::map<std::string, int64_t> extra = {}) {
  NodeProbe p;
  p.address = "10.0.0.1:7000";
  p.reachable = true;
  NodeStatsSnapshot s;
  s.address = p.address;
  s.counters[std::string(stats::node_id)] = id;
  s.counters[std::string(stats::keys_approx)] = 0;
  s.counters[std::string(stats::bytes_approx)] = 0;
  for (const auto& [k, v] : extra) s.counters[k] = v;
  p.stats = s;
  return p;
}

ClusterMap MapOf(uint64_t cluster_id, int nodes) {
  std::vector<ClusterNode> members;
  for (int i = 1; i <= nodes; ++i) {
    members.push_back(
        {static_cast<uint32_t>(i), "10.0.0." + std::to_string(i) + ":7000", 1.0, NodeState::kUp});
  }
  ClusterParams p = FormSmallRing();
  p.replication_factor = p.write_quorum = p.read_quorum = 1;
  auto m = ClusterMap::Create(cluster_id, p, members, 1);
  REQUIRE(m.ok());
  return *m;
}

}  // namespace

TEST_CASE("admin: FormableNode classifies probes", "[admin]") {
  CHECK(FormableNode(Answering(1)).ok());  // answers, no map, no `formed`: nothing against it

  NodeProbe standalone = Answering(1);
  standalone.map = MapOf(77, 1);
  CHECK(FormableNode(standalone).ok());

  NodeProbe unformed = Answering(2, {{"formed", 0}});
  unformed.unformed = true;
  CHECK(FormableNode(unformed).ok());

  NodeProbe member = Answering(1);
  member.map = MapOf(77, 2);
  Status s = FormableNode(member);
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(s.message().find("already belongs to cluster 77 (epoch 1, 2 node(s))") !=
        std::string::npos);
  CHECK(s.message().rfind("10.0.0.1:7000 (node 1)", 0) == 0);

  // `formed` = 1 wins over a one-node map: `init` takes only unformed nodes.
  NodeProbe formed_one = Answering(1, {{"formed", 1}});
  formed_one.map = MapOf(78, 1);
  CHECK(FormableNode(formed_one).code() == Status::Code::kFailedPrecondition);

  NodeProbe keys = Answering(1, {{std::string(stats::keys_approx), 3}});
  keys.map = MapOf(77, 1);
  s = FormableNode(keys);
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(s.message().find("holds data (about 3 key(s)") != std::string::npos);
  // Bytes without a key count (a tombstone in a table file): still data.
  CHECK(FormableNode(Answering(1, {{std::string(stats::bytes_approx), 40}})).code() ==
        Status::Code::kFailedPrecondition);

  NodeProbe down;
  down.address = "10.0.0.9:7000";
  down.error = Status::Unavailable("10.0.0.9:7000: connection refused");
  s = FormableNode(down);
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK(s.message().find("did not answer") != std::string::npos);

  NodeProbe no_stats = Answering(1);
  no_stats.stats.reset();
  CHECK(FormableNode(no_stats).code() == Status::Code::kUnavailable);
  CHECK(FormableNode(Answering(0)).code() == Status::Code::kInvalidArgument);
  CHECK(ReportedNodeId(Answering(5)) == 5);
  CHECK(ReportedNodeId(down) == 0);
}

TEST_CASE("admin: FormCluster refuses a node of a formed cluster and installs nothing", "[admin]") {
  Fresh f(2);
  InProcessCluster other(3, FormSmallRing(), 0, 0xFACE);
  REQUIRE(other.Start().ok());
  std::vector<ClusterNode> nodes = f.Nodes();
  nodes.push_back({3, other.Address(3), 1.0, NodeState::kUp});
  auto admin = AdminFor({nodes[0].address});
  auto formed = admin->FormCluster(nodes, FormSmallRing());
  INFO(formed.status().ToString());
  REQUIRE_FALSE(formed.ok());
  CHECK(formed.status().code() == Status::Code::kFailedPrecondition);
  CHECK(formed.status().message().find("not forming the cluster (nothing changed)") == 0);
  CHECK(formed.status().message().find(other.Address(3) + " (node 3) already belongs to cluster " +
                                       std::to_string(0xFACE)) != std::string::npos);
  f.RequireUntouched();
  CHECK(testing::ClusterIdOf(other.Address(3)) == 0xFACE);
  CHECK(admin->cluster_id() == 0);  // adopted nothing
}

TEST_CASE("admin: FormCluster refuses a one-node cluster that holds data and installs nothing",
          "[admin]") {
  Fresh f(3);
  {
    // Node 3 serves alone first (a one-node cluster, like a 0.1.0 standalone node) and keeps a
    // key: fresh nodes are unformed and accept no data.
    ClusterParams solo;
    solo.replication_factor = solo.write_quorum = solo.read_quorum = 1;
    auto alone =
        AdminFor({f.c.Address(3)})->FormCluster({{3, f.c.Address(3), 1.0, NodeState::kUp}}, solo);
    INFO(alone.status().ToString());
    REQUIRE(alone.ok());
    auto client = testing::MustConnect(f.c.Address(3));
    auto put = client->Put("left-over", "value");
    INFO(put.status().ToString());
    REQUIRE(put.ok());
    f.before[2] = Held(f.c.Address(3));
  }
  auto formed = AdminFor({f.c.Address(1)})->FormCluster(f.Nodes(), FormSmallRing());
  INFO(formed.status().ToString());
  REQUIRE_FALSE(formed.ok());
  CHECK(formed.status().code() == Status::Code::kFailedPrecondition);
  // Since nodes start unformed, a node with data is a member of some cluster, and is refused
  // as such (an unformed node with keys is refused as "holds data": see the probe cases above).
  CHECK(formed.status().message().find(f.c.Address(3) + " (node 3) already belongs to cluster") !=
        std::string::npos);
  f.RequireUntouched();
}

TEST_CASE("admin: FormCluster refuses an unreachable node and installs nothing", "[admin]") {
  Fresh f(2);
  std::vector<ClusterNode> nodes = f.Nodes();
  nodes.push_back({3, "127.0.0.1:1", 1.0, NodeState::kUp});  // nothing listens on port 1
  auto formed =
      AdminFor({nodes[0].address}, 0, std::chrono::seconds(2))->FormCluster(nodes, FormSmallRing());
  INFO(formed.status().ToString());
  REQUIRE_FALSE(formed.ok());
  CHECK(formed.status().code() == Status::Code::kUnavailable);
  CHECK(formed.status().message().find("127.0.0.1:1 did not answer") != std::string::npos);
  f.RequireUntouched();
}

TEST_CASE("admin: FormCluster refuses ids given twice or not the node's own", "[admin]") {
  Fresh f(3);
  auto admin = AdminFor({f.c.Address(1)});
  std::vector<ClusterNode> twice = f.Nodes();
  twice[2].id = 1;
  Status s = admin->FormCluster(twice, FormSmallRing()).status();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("node id 1 is given twice") != std::string::npos);
  std::vector<ClusterNode> same_address = f.Nodes();
  same_address[2].address = same_address[0].address;
  s = admin->FormCluster(same_address, FormSmallRing()).status();
  CHECK(s.code() == Status::Code::kInvalidArgument);
  CHECK(s.message().find("is given twice") != std::string::npos);
  // Ids swapped: each address reports the other id.
  std::vector<ClusterNode> swapped = f.Nodes();
  std::swap(swapped[0].id, swapped[1].id);
  s = admin->FormCluster(swapped, FormSmallRing()).status();
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(s.message().find("reports node id") != std::string::npos);
  f.RequireUntouched();
}

TEST_CASE("admin: FormCluster again with the same id and nodes is accepted as a retry", "[admin]") {
  Fresh f(3);
  auto first = AdminFor({f.c.Address(1)})->FormCluster(f.Nodes(), FormSmallRing(), 0xAB);
  INFO(first.status().ToString());
  REQUIRE(first.ok());
  // Every node holds exactly this map already: a retry changes nothing and succeeds.
  auto again = AdminFor({f.c.Address(1)})->FormCluster(f.Nodes(), FormSmallRing(), 0xAB);
  INFO(again.status().ToString());
  REQUIRE(again.ok());
  CHECK(again->ContentHash() == first->ContentHash());
  // With another id it is a new cluster, and these nodes are members of one.
  auto other = AdminFor({f.c.Address(1)})->FormCluster(f.Nodes(), FormSmallRing(), 0xAC);
  CHECK(other.status().code() == Status::Code::kFailedPrecondition);
  for (uint32_t id = 1; id <= 3; ++id) CHECK(testing::ClusterIdOf(f.c.Address(id)) == 0xAB);
}
