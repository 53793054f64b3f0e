// Unformed nodes (design.md "Unformed nodes") and --advertise: a fresh node has no cluster id
// and no map, answers only what `cluster init` and `cluster join` need, and stays so across a
// restart; a directory with a standalone one-node map keeps working; a node states its
// advertised address wherever it states its own.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>

#include "cluster/map_store.h"
#include "net/rpc_client.h"
#include "shardkv/admin.h"
#include "shardkv/node.h"
#include "shardkv/stats.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::testing::TempDir;

namespace {

constexpr auto kTimeout = std::chrono::seconds(5);

NodeOptions UnformedOptions(const std::string& dir) {
  NodeOptions o;
  o.id = 3;
  o.data_dir = dir;
  o.io_threads = 1;
  return o;
}

StatusOr<net::Response> Call(const std::string& address, net::RequestBody body) {
  net::RpcClient rpc(address);
  net::Request req;
  req.body = std::move(body);
  return rpc.CallSync(std::move(req), kTimeout);
}

int64_t Counter(const std::string& address, std::string_view name) {
  auto reply = Call(address, net::StatsRequest{});
  REQUIRE(reply.ok());
  REQUIRE(reply->ok());
  const auto& counters = std::get<net::StatsResponse>(reply->body).counters;
  auto it = counters.find(std::string(name));
  REQUIRE(it != counters.end());
  return it->second;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

const std::string kUnformed =
    "node 3 is unformed (not in a cluster yet): form a cluster with `shardkv cluster init` or "
    "add it with `shardkv cluster join`";

// The unformed node's answers, as `cluster init` relies on them.
void CheckUnformed(const Node& node) {
  const std::string a = node.address();
  auto ping = Call(a, net::PingRequest{});
  REQUIRE(ping.ok());
  CHECK(ping->ok());
  CHECK(ping->epoch == 0);
  CHECK(Counter(a, stats::formed) == 0);
  CHECK(Counter(a, stats::epoch) == 0);
  CHECK(Counter(a, stats::node_id) == 3);
  auto map = Call(a, net::GetClusterMapRequest{});
  REQUIRE(map.ok());
  CHECK(map->status().code() == Status::Code::kFailedPrecondition);
  CHECK(map->status().message().rfind("unformed:", 0) == 0);
  for (net::RequestBody body :
       {net::RequestBody{net::PutRequest{1, "k", "v"}}, net::RequestBody{net::GetRequest{1, "k"}},
        net::RequestBody{net::DeleteRequest{1, "k"}},
        net::RequestBody{net::ReplicaReadRequest{1, "k"}},
        net::RequestBody{net::CountRangesRequest{{{0, UINT64_MAX}}}},
        net::RequestBody{net::InstallMapRequest{"", 1, /*adopt=*/false}}}) {
    auto reply = Call(a, std::move(body));
    REQUIRE(reply.ok());
    CHECK(reply->status().code() == Status::Code::kUnavailable);
    CHECK(reply->status().message() == kUnformed);
  }
  CHECK(testing::ClusterIdOf(a) == 0);
}

}  // namespace

TEST_CASE("unformed node: serves only ping, stats and formation, also after a restart",
          "[node][unformed]") {
  TempDir dir;
  {
    auto node = testing::MustStart(UnformedOptions(dir.path()));
    CheckUnformed(*node);
  }
  // Restarted, it is still unformed: it never made itself a cluster of one.
  auto node = testing::MustStart(UnformedOptions(dir.path()));
  CheckUnformed(*node);

  // Formation (an adopting install, through Admin::FormCluster) makes it a usable node.
  const ClusterMap formed = testing::MustFormAlone(*node, 0x5EED);
  CHECK(formed.cluster_id() == 0x5EED);
  CHECK(Counter(node->address(), stats::formed) == 1);
  CHECK(Counter(node->address(), stats::epoch) == 1);
  auto client = testing::MustConnect(node->address());
  REQUIRE(client->Put("k", "v").ok());
  CHECK(*client->Get("k") == "v");
  client.reset();
  node.reset();
  // And stays formed.
  node = testing::MustStart(UnformedOptions(dir.path()));
  CHECK(Counter(node->address(), stats::formed) == 1);
  CHECK(testing::ClusterIdOf(node->address()) == 0x5EED);
  CHECK(*testing::MustConnect(node->address())->Get("k") == "v");
}

TEST_CASE("unformed node: a directory holding a standalone one-node map keeps working",
          "[node][unformed]") {
  // What a fresh node of shardkv 0.1.0 (and of this version before unformed nodes) persisted:
  // a one-node map of its own, RF=W=Q=1.
  TempDir dir;
  {
    storage::StorageOptions so;
    so.node_id = 3;
    auto storage = storage::Storage::Open(dir.Sub("db"), so);
    REQUIRE(storage.ok());
    cluster::MapStore maps(storage->get());
    ClusterParams solo;
    solo.replication_factor = solo.write_quorum = solo.read_quorum = 1;
    auto map = ClusterMap::Create(0xABC, solo, {{3, "127.0.0.1:1", 1, NodeState::kUp}}, 3);
    REQUIRE(map.ok());
    REQUIRE(maps.Reset(*map).ok());
    REQUIRE((*storage)->Close().ok());
  }
  auto node = testing::MustStart(UnformedOptions(dir.path()));
  CHECK(Counter(node->address(), stats::formed) == 1);
  auto map = testing::NodeMap(node->address());
  REQUIRE(map.has_value());
  CHECK(map->cluster_id() == 0xABC);
  // Restarted on another port, it moved its own address (epoch 2), as before.
  CHECK(map->epoch() == 2);
  CHECK(map->FindNode(3)->address == node->address());
  auto client = testing::MustConnect(node->address());
  REQUIRE(client->Put("k", "v").ok());
  CHECK(*client->Get("k") == "v");
}

TEST_CASE("node: --advertise is the address the node states everywhere", "[node][advertise]") {
  TempDir dir;
  NodeOptions o = UnformedOptions(dir.path());
  o.listen = "127.0.0.1:0";
  o.advertise = "127.0.0.2:17123";
  auto node = testing::MustStart(o);
  const std::string bound = "127.0.0.1:" + std::to_string(node->port());
  CHECK(node->port() != 0);
  CHECK(node->address() == "127.0.0.2:17123");
  CHECK(FirstLine(dir.Sub("port")) == std::to_string(node->port()));  // what a local launcher dials
  CHECK(FirstLine(dir.Sub("address")) == "127.0.0.2:17123");

  // Formed (an adopting install sent to the bound address) under the advertised address, and
  // kept so across a restart: a one-node map does not rewrite it to the bound one.
  ClusterParams solo;
  solo.replication_factor = solo.write_quorum = solo.read_quorum = 1;
  auto map = ClusterMap::Create(0xAD, solo, {{3, node->address(), 1, NodeState::kUp}}, 3);
  REQUIRE(map.ok());
  auto installed = Call(bound, net::InstallMapRequest{map->Encode(), 0, /*adopt=*/true});
  REQUIRE(installed.ok());
  INFO(installed->status().ToString());
  REQUIRE(installed->ok());
  node.reset();
  node = testing::MustStart(o);
  const std::string rebound = "127.0.0.1:" + std::to_string(node->port());
  auto held = testing::NodeMap(rebound);
  REQUIRE(held.has_value());
  CHECK(held->epoch() == 1);
  CHECK(held->FindNode(3)->address == "127.0.0.2:17123");
  node.reset();
  // Without --advertise the node goes back to stating its bound address.
  o.advertise.clear();
  node = testing::MustStart(o);
  held = testing::NodeMap(node->address());
  REQUIRE(held.has_value());
  CHECK(held->FindNode(3)->address == node->address());
  CHECK(node->address() == "127.0.0.1:" + std::to_string(node->port()));
  CHECK(FirstLine(dir.Sub("address")) == node->address());
}

TEST_CASE("node options: --advertise must be a host and a port peers can dial",
          "[node][advertise]") {
  TempDir dir;
  NodeOptions o = UnformedOptions(dir.Sub("never"));
  for (const char* good : {"10.0.0.1:7000", "db1.example:7000", "[fd00::1]:7000"}) {
    o.advertise = good;
    INFO(good);
    CHECK(ValidateNodeOptions(o).ok());
  }
  struct Bad {
    const char* advertise;
    const char* says;
  };
  for (const Bad& bad : {Bad{"10.0.0.1", "is not host:port"}, Bad{"10.0.0.1:0", "has port 0"},
                         Bad{":7000", "has no host"}, Bad{"0.0.0.0:7000", "any-address"},
                         Bad{"[::]:7000", "any-address"}, Bad{"10.0.0.1:70000", "bad port"},
                         Bad{"a b:7000", "bad host"}}) {
    o.advertise = bad.advertise;
    const Status s = ValidateNodeOptions(o);
    INFO(bad.advertise << ": " << s.ToString());
    CHECK(s.IsInvalidArgument());
    CHECK(s.message().find("--advertise") != std::string::npos);
    CHECK(s.message().find(bad.says) != std::string::npos);
    CHECK(Node::Start(o).status().IsInvalidArgument());
  }
}
