// The client talks to one cluster only (ClientOptions::cluster_id): a node of another cluster
// is refused whether its map comes from a seed or it refuses a request, and the error names
// both ids. Issue 9, findings row 3: a stopped cluster's ports taken by another cluster.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "shardkv/client.h"
#include "shardkv/node.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::testing::ClusterIdOf;
using shardkv::testing::InProcessCluster;
using shardkv::testing::TempDir;

namespace {

constexpr uint64_t kClusterA = shardkv::testing::kInProcessClusterId;

ClusterParams OneReplica() {
  ClusterParams p;
  p.replication_factor = 1;
  p.write_quorum = 1;
  p.read_quorum = 1;
  return p;
}

// A fresh node formed into a one-node cluster of its own, with a random id.
std::unique_ptr<Node> StartLoneNode(const std::string& dir, const std::string& listen) {
  NodeOptions o;
  o.id = 1;
  o.data_dir = dir;
  o.listen = listen;
  o.io_threads = 1;
  return shardkv::testing::MustStartFormed(o);
}

}  // namespace

TEST_CASE("client: a seed of another cluster is refused, naming both ids", "[client]") {
  TempDir dir;
  auto lone = StartLoneNode(dir.Sub("lone"), "127.0.0.1:0");
  const uint64_t theirs = ClusterIdOf(lone->address());
  REQUIRE(theirs != kClusterA);

  ClientOptions o;
  o.seeds = {lone->address()};
  o.cluster_id = kClusterA;
  o.cluster_id_source = "the cluster in /some/dir";
  o.timeout_ms = 2000;
  auto c = Client::Connect(o);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == Status::Code::kUnavailable);
  CHECK(c.status().message() == lone->address() + " belongs to cluster " + std::to_string(theirs) +
                                    ", not cluster " + std::to_string(kClusterA) +
                                    " (the cluster in /some/dir)");
}

TEST_CASE("client: with no id given it adopts the first cluster and refuses any other",
          "[client]") {
  InProcessCluster a(2, OneReplica());
  REQUIRE(a.Start().ok());
  TempDir dir;
  auto lone = StartLoneNode(dir.Sub("lone"), "127.0.0.1:0");
  const uint64_t theirs = ClusterIdOf(lone->address());

  ClientOptions o;
  o.seeds = {a.Address(1), lone->address()};
  o.timeout_ms = 2000;
  auto c = a.Connect(o);
  REQUIRE(c.ok());
  CHECK((*c)->cluster_id() == kClusterA);
  // A request sent straight to the foreign node is refused by it and reported as wrong-cluster.
  auto stats = (*c)->NodeStats(lone->address());
  REQUIRE_FALSE(stats.ok());
  CHECK(stats.status().code() == Status::Code::kUnavailable);
  CHECK(stats.status().message().find(lone->address() + " belongs to cluster " +
                                      std::to_string(theirs) + ", not cluster " +
                                      std::to_string(kClusterA)) != std::string::npos);
  CHECK(stats.status().message().find("first reached at " + a.Address(1)) != std::string::npos);
  // The own cluster still works.
  REQUIRE((*c)->Put("k", "v").ok());
  CHECK((*c)->NodeStats(a.Address(2)).ok());
  // A refresh never adopts the foreign map either.
  REQUIRE((*c)->RefreshMap().ok());
  CHECK((*c)->map()->cluster_id() == kClusterA);
}

TEST_CASE("client: another cluster on the ports of a stopped one gets no reads or writes",
          "[client]") {
  InProcessCluster a(1, OneReplica());
  REQUIRE(a.Start().ok());
  const std::string address = a.Address(1);
  ClientOptions o;
  o.timeout_ms = 2000;
  o.max_retries = 1;
  auto c = a.Connect(o);
  REQUIRE(c.ok());
  REQUIRE((*c)->Put("k", "v").ok());

  // Cluster A stops; a node of another cluster starts on its port.
  a.StopNode(1);
  TempDir dir;
  auto b = StartLoneNode(dir.Sub("b"), address);
  const uint64_t theirs = ClusterIdOf(address);
  REQUIRE(theirs != kClusterA);

  const std::string expected = address + " belongs to cluster " + std::to_string(theirs) +
                               ", not cluster " + std::to_string(kClusterA);
  auto got = (*c)->Get("k");
  REQUIRE_FALSE(got.ok());
  CHECK_FALSE(got.status().IsNotFound());  // before the fix: "not found", as if data was lost
  CHECK(got.status().code() == Status::Code::kUnavailable);
  CHECK(got.status().message().find(expected) != std::string::npos);
  auto put = (*c)->Put("written:to:a", "yes");
  REQUIRE_FALSE(put.ok());
  CHECK(put.status().message().find(expected) != std::string::npos);

  // The other cluster did not get the key.
  ClientOptions ob;
  ob.seeds = {address};
  auto cb = Client::Connect(ob);
  REQUIRE(cb.ok());
  CHECK((*cb)->Get("written:to:a").status().IsNotFound());
  // And a new client expecting cluster A refuses the port outright.
  ClientOptions oa;
  oa.seeds = {address};
  oa.cluster_id = kClusterA;
  auto ca = Client::Connect(oa);
  REQUIRE_FALSE(ca.ok());
  CHECK(ca.status().message().find(expected) != std::string::npos);
}

TEST_CASE("client: a seed that is no host:port is a usage error", "[client]") {
  for (const char* bad : {"nonsense", "host:", ":7000", "h:0", "h:65536", "h:12x"}) {
    ClientOptions o;
    o.seeds = {bad};
    auto c = Client::Connect(o);
    INFO(bad);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Status::Code::kInvalidArgument);
  }
}
