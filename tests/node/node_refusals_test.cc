// Issue 9, node side: options refused up front, a member that lost its data (or holds another
// cluster's) refuses to start, one data directory per process, adoption and rebuild only within
// the node's cluster, and the disk health fields of stats.
#include <catch2/catch.hpp>
#include <filesystem>

#include "net/rpc_client.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/node.h"
#include "testing/cluster_util.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"
#include "testing/time_scale.h"

using namespace shardkv;
using shardkv::testing::MustStart;
using shardkv::testing::MustStartFormed;
using shardkv::testing::TempDir;

namespace {

NodeOptions Options(const std::string& dir, uint32_t id = 1) {
  NodeOptions o;
  o.id = id;
  o.data_dir = dir;
  return o;
}

std::unique_ptr<Client> ConnectTo(const Node& node) { return testing::MustConnect(node.address()); }

uint64_t ClusterIdOf(const Node& node) { return testing::ClusterIdOf(node.address()); }

}  // namespace

TEST_CASE("node options: every value a node cannot work with is refused", "[node][hardening]") {
  TempDir dir;
  CHECK(ValidateNodeOptions(Options(dir.path())).ok());
  struct Bad {
    const char* what;
    void (*set)(NodeOptions*);
    const char* says;
  };
  const Bad cases[] = {
      {"id 0", [](NodeOptions* o) { o->id = 0; }, "--id"},
      {"id too big", [](NodeOptions* o) { o->id = kMaxNodeId + 1; }, "--id"},
      {"no data", [](NodeOptions* o) { o->data_dir.clear(); }, "--data"},
      {"no colon", [](NodeOptions* o) { o->listen = "nonsense"; }, "is not host:port"},
      {"port > 65535", [](NodeOptions* o) { o->listen = "127.0.0.1:65536"; }, "bad port"},
      {"port text", [](NodeOptions* o) { o->listen = "127.0.0.1:http"; }, "bad port"},
      {"bad host", [](NodeOptions* o) { o->listen = "a b:1"; }, "bad host"},
      {"bare ipv6", [](NodeOptions* o) { o->listen = "::1:7000"; }, "brackets"},
      {"threads 0", [](NodeOptions* o) { o->io_threads = 0; }, "--threads"},
      {"threads", [](NodeOptions* o) { o->io_threads = kMaxIoThreads + 1; }, "--threads"},
      {"key 0", [](NodeOptions* o) { o->max_key_bytes = 0; }, "--max-key-bytes"},
      {"key", [](NodeOptions* o) { o->max_key_bytes = kMaxKeyBytesLimit + 1; }, "--max-key"},
      {"value 0", [](NodeOptions* o) { o->max_value_bytes = 0; }, "--max-value-bytes"},
      {"value", [](NodeOptions* o) { o->max_value_bytes = kMaxValueBytesLimit + 1; }, "value"},
      {"frame", [](NodeOptions* o) { o->max_frame_bytes = 1 << 20; }, "do not fit in a frame"},
      {"grace 0", [](NodeOptions* o) { o->tombstone_grace_ms = 0; }, "--tombstone-grace"},
      {"seed", [](NodeOptions* o) { o->seeds = {"127.0.0.1"}; }, "--seeds"},
      {"seed port 0", [](NodeOptions* o) { o->seeds = {"127.0.0.1:0"}; }, "port 0"},
      {"rebuild", [](NodeOptions* o) { o->rebuild = true; }, "--rebuild needs --seeds"},
  };
  for (const Bad& bad : cases) {
    NodeOptions o = Options(dir.Sub("never"));
    bad.set(&o);
    Status s = ValidateNodeOptions(o);
    INFO(bad.what << ": " << s.ToString());
    CHECK(s.IsInvalidArgument());
    CHECK(s.message().find(bad.says) != std::string::npos);
    // Node::Start refuses the same, before it creates anything.
    CHECK(Node::Start(o).status().IsInvalidArgument());
    CHECK_FALSE(std::filesystem::exists(dir.Sub("never")));
  }
  NodeOptions max = Options(dir.Sub("max"));
  max.max_key_bytes = kMaxKeyBytesLimit;
  max.max_value_bytes = kMaxValueBytesLimit;
  max.io_threads = kMaxIoThreads;
  max.listen = "[::1]:0";
  CHECK(ValidateNodeOptions(max).ok());
}

TEST_CASE("node: a member whose data is gone or foreign refuses to start", "[node][hardening]") {
  TempDir dir;
  const std::string data = dir.Sub("n1");
  uint64_t cluster_id = 0;
  {
    auto node = MustStartFormed(Options(data));
    cluster_id = ClusterIdOf(*node);
  }
  NodeOptions member = Options(data);
  member.cluster_id = cluster_id;
  MustStart(member);  // its own cluster: fine

  NodeOptions foreign = member;
  foreign.cluster_id = cluster_id + 1;
  Status s = Node::Start(foreign).status();
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(s.reason() == Status::Reason::kNeedsRebuild);
  CHECK(s.message().find("holds a database of cluster " + std::to_string(cluster_id)) !=
        std::string::npos);

  // The database is deleted (rm -rf DATA/db while it ran, a lost disk): it must not come back
  // empty under a new cluster id.
  std::filesystem::remove_all(data + "/db");
  s = Node::Start(member).status();
  CHECK(s.reason() == Status::Reason::kNeedsRebuild);
  CHECK(s.message() == "data directory " + data + " holds no database, but this node is member " +
                           "1 of cluster " + std::to_string(cluster_id) +
                           "; it must not start empty: rebuild it with `shardkv cluster "
                           "start-node 1 --rebuild`");
  CHECK_FALSE(std::filesystem::exists(data + "/db"));  // and it created nothing
  std::filesystem::remove_all(data);
  CHECK(Node::Start(member).status().code() == Status::Code::kFailedPrecondition);

  // Without --cluster-id (a new node) a fresh directory is still fine: the node is unformed.
  auto fresh = MustStart(Options(dir.Sub("n2")));
  CHECK(ClusterIdOf(*fresh) == 0);
  const NodeProbe probe = testing::AdminFor({fresh->address()})->Probe(fresh->address());
  REQUIRE(probe.stats.has_value());
  CHECK(probe.stats->counters.at("formed") == 0);
}

TEST_CASE("node: a rebuild takes maps only from its own cluster", "[node][hardening]") {
  TempDir dir;
  auto other = MustStartFormed(Options(dir.Sub("other"), 1));
  const uint64_t other_cluster = ClusterIdOf(*other);
  NodeOptions rebuild = Options(dir.Sub("rebuilt"), 1);
  rebuild.rebuild = true;
  rebuild.seeds = {other->address()};
  rebuild.cluster_id = other_cluster + 1;
  Status s = Node::Start(rebuild).status();
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(s.message().find("no seed is in cluster " + std::to_string(other_cluster + 1)) !=
        std::string::npos);
}

TEST_CASE("node: a node started for a cluster refuses adoption into another", "[node][hardening]") {
  TempDir dir;
  uint64_t cluster_id = 0;
  {
    auto node = MustStartFormed(Options(dir.Sub("n1")));
    cluster_id = ClusterIdOf(*node);
  }
  NodeOptions member = Options(dir.Sub("n1"));
  member.cluster_id = cluster_id;
  auto node = MustStart(member);
  ClusterParams params;
  params.replication_factor = params.write_quorum = params.read_quorum = 1;
  // Forming another cluster with it is refused: by Admin::FormCluster's own check first ...
  auto formed =
      testing::AdminFor({node->address()})
          ->FormCluster({{1, node->address(), 1.0, NodeState::kUp}}, params, cluster_id + 1);
  INFO(formed.status().ToString());
  REQUIRE_FALSE(formed.ok());
  CHECK(formed.status().code() == Status::Code::kFailedPrecondition);
  CHECK(formed.status().message().find("already belongs to cluster") != std::string::npos);
  // ... and by the node itself when an adopting install reaches it anyway (an older or another
  // admin tool that skips the check).
  auto other =
      ClusterMap::Create(cluster_id + 1, params, {{1, node->address(), 1.0, NodeState::kUp}}, 1);
  REQUIRE(other.ok());
  net::RpcClient rpc(node->address());
  net::Request install;
  install.body = net::InstallMapRequest{other->Encode(), 0, /*adopt=*/true};
  auto refused = rpc.CallSync(std::move(install), std::chrono::seconds(5));
  REQUIRE(refused.ok());
  INFO(refused->status().ToString());
  CHECK(refused->status().code() == Status::Code::kFailedPrecondition);
  CHECK(refused->status().message().find("was started as a member of cluster") !=
        std::string::npos);
  CHECK(ClusterIdOf(*node) == cluster_id);
}

TEST_CASE("node: one data directory holds one node", "[node][hardening]") {
  TempDir dir;
  auto first = MustStart(Options(dir.path()));
  NodeOptions second = Options(dir.path(), 2);
  Status s = Node::Start(second).status();
  CHECK(s.message() ==
        "data directory " + dir.path() + " is in use by another process (lock held)");
  first.reset();  // the lock goes with the node
  MustStart(second);
}

TEST_CASE("node: stats report disk health", "[node][hardening]") {
  TempDir dir;
  auto node = MustStartFormed(Options(dir.path()));
  auto client = ConnectTo(*node);
  REQUIRE(client->Put("k", "v").ok());
  auto stats = client->NodeStats(node->address());
  REQUIRE(stats.ok());
  REQUIRE(stats->gauges.count("disk_full") == 1);
  CHECK(stats->gauges["disk_full"] == 0);
  REQUIRE(stats->counters.count("storage_io_errors") == 1);
  CHECK(stats->counters["storage_io_errors"] == 0);
}

TEST_CASE("node: the largest accepted limits work end to end", "[node][hardening]") {
  TempDir dir;
  NodeOptions o = Options(dir.path());
  o.io_threads = kMaxIoThreads;
  o.max_key_bytes = kMaxKeyBytesLimit;
  o.max_value_bytes = kMaxValueBytesLimit;
  o.tombstone_grace_ms = kMaxTombstoneGraceSeconds * 1000;
  auto node = MustStartFormed(o);
  // A 16 MiB value, copied and hashed many times over: under TSan (TimeScale() > 1) every copy
  // goes through its memcpy interceptor, and a put and a get took 25-50 s on 2 shared cores.
  const uint32_t timeout_ms = testing::TimeScale() > 1 ? testing::ScaledMs(uint32_t{24000}) : 5000;
  auto client = testing::MustConnect(node->address(), timeout_ms);
  const std::string key(kMaxKeyBytesLimit, 'k');
  const std::string value(kMaxValueBytesLimit, 'v');
  auto put = client->Put(key, value);
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  auto got = client->Get(key);
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  CHECK(*got == value);
  REQUIRE(client->Delete(key).ok());
  CHECK(client->Put(key, value + "x").status().IsInvalidArgument());
  CHECK(client->Put(key + "k", "v").status().IsInvalidArgument());
}
