// Needs repair (design.md "Needs repair", issue 12 section 3): a node whose hints expired on
// another node (it was away longer than the tombstone grace) serves no replica reads and is no
// stream source until it is rebuilt, so deletes acknowledged while it was away stay deleted after
// the other replicas purged their tombstones (fault bed 2026-12-01, A4: 17 deleted keys came
// back).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "rebalance_test_util.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"
#include "testing/needs_repair.h"

using namespace shardkv;
using shardkv::testing::CounterOf;
using shardkv::testing::DeleteWhileAway;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;
using shardkv::testing::Marks;

namespace {

// Short, so hints expire within the test; long enough that the deletes themselves are not late.
constexpr uint64_t kGraceMs = 2000;

std::vector<std::string> Keys(const std::string& prefix, int n) {
  std::vector<std::string> keys;
  for (int i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// True if `local` (a replica read) shows a live value.
bool Live(const StatusOr<net::ReplicaReadResponse>& local) {
  return local.ok() && local->found && !local->tombstone;
}

// The needs-repair rules guard against replicas that collected the tombstones of deletes a node
// away missed. The GC rule (design.md "Tombstones and GC") keeps them while that node is away, so
// these tests turn it off, as on replicas of an earlier release, to have such replicas.
void GraceAlone(uint32_t /*id*/, NodeOptions* o) { o->gc_waits_for_repair_for_test = false; }

// Nodes `ids` drop their hints for the away node (they expired) and then collect the
// tombstones of the deletes: what the fault bed's other replicas had done when node 3 returned.
void PurgeTombstones(InProcessCluster& c, Client& client, const std::vector<uint32_t>& ids) {
  REQUIRE(Eventually(
      [&] {
        for (uint32_t id : ids) {
          if (CounterOf(client, c, id, "hints_pending") != 0) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
  REQUIRE(Eventually(
      [&] {
        for (uint32_t id : ids) {
          auto dropped = c.node(id)->Compact();
          if (!dropped.ok() || *dropped == 0) return false;
        }
        return true;
      },
      std::chrono::seconds(30)));
}

}  // namespace

TEST_CASE("needs repair: the node serves no replica reads, and a quorum read keeps a delete",
          "[replication][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kGraceMs);
  cluster.TuneNodes(GraceAlone);
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  REQUIRE(client->Put("kept", "v").ok());
  const auto gone = Keys("gone", 20);
  DeleteWhileAway(cluster, *client, 3, gone, kGraceMs);
  // While node 3 is still away, every coordinator already counts it out for its mark (one that
  // holds no hints learns the mark from the others' stats within a poll).
  CHECK(Eventually([&] {
    auto all = client->Get("kept", Consistency::kAll);
    return !all.ok() && Contains(all.status().message(), "node 3 needs repair (marked by node");
  }));
  REQUIRE(cluster.RestartNode(3).ok());
  // It asked its peers before it served anything, and persisted what they said.
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  auto stats = client->NodeStats(cluster.Address(3));
  REQUIRE(stats.ok());
  CHECK(Contains(stats->info["needs_repair_reason"], "tombstone grace"));
  PurgeTombstones(cluster, *client, {1, 2});

  auto refused = cluster.LocalRead(3, gone[0]);
  INFO(refused.status().ToString());
  CHECK(refused.status().code() == Status::Code::kFailedPrecondition);
  CHECK(Contains(refused.status().message(), "node 3 needs repair"));
  CHECK(Contains(refused.status().message(), "shardkv cluster start-node 3 --rebuild"));

  // Node 3 still holds "old" for every key, and the others hold nothing: only its exclusion
  // keeps the deletes. Each client request may be coordinated by any node, node 3 included.
  for (const std::string& key : gone) {
    for (int round = 0; round < 2; ++round) {
      auto got = client->Get(key);
      INFO(key << ": " << got.status().ToString());
      CHECK(got.status().IsNotFound());
      CHECK(client->Get(key, Consistency::kOne).status().IsNotFound());
    }
  }
  CHECK(*client->Get("kept") == "v");
  // `all` needs node 3, which does not count; the error says why.
  auto all = client->Get(gone[0], Consistency::kAll);
  INFO(all.status().ToString());
  CHECK(all.status().code() == Status::Code::kUnavailable);
  CHECK(Contains(all.status().message(), "needs repair"));
  // No read repaired node 3's old values onto the others.
  for (const std::string& key : gone) {
    for (uint32_t id : {1u, 2u}) CHECK_FALSE(Live(cluster.LocalRead(id, key)));
  }
  // It still takes writes (they are newer than anything it lost).
  REQUIRE(client->Put("after", "w", Consistency::kAll).ok());
}

TEST_CASE("needs repair: the node is no stream source, so a joining node gets no deleted key",
          "[rebalance][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kGraceMs);
  cluster.TuneNodes(GraceAlone);
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  const auto gone = Keys("gone", 40);
  DeleteWhileAway(cluster, *client, 3, gone, kGraceMs);
  REQUIRE(cluster.RestartNode(3).ok());
  PurgeTombstones(cluster, *client, {1, 2});

  net::Request scan;
  scan.body = net::StreamScanRequest{7, 0, UINT64_MAX, "", 100, 1 << 20, {}, 0};
  auto reply = cluster.Call(3, std::move(scan));
  REQUIRE(reply.ok());
  INFO(reply->status().ToString());
  CHECK(reply->status().code() == Status::Code::kFailedPrecondition);
  CHECK(Contains(reply->status().message(), "node 3 needs repair"));
  CHECK(Contains(reply->status().message(), "stream source"));
  CHECK(Contains(reply->status().message(), "--rebuild"));

  // A join: where node 3 is the preferred source, the destination merges from nodes 1 and 2.
  auto added = cluster.AddStandaloneNode();
  REQUIRE(added.ok());
  auto admin = shardkv::testing::AdminFor(cluster);
  const AdminReply begun =
      admin->Begin(rebalance_test::AddOf(cluster, *added), rebalance_test::RateMb(0));
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  auto done = shardkv::testing::WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  for (const std::string& key : gone) {
    INFO(key);
    CHECK_FALSE(Live(cluster.LocalRead(*added, key)));
    CHECK(client->Get(key).status().IsNotFound());
  }
}

// The multihost scenario's race (a partition longer than the grace, a restart, a heal, a join):
// right after the heal the node that needs repair has not polled its peers yet, so it would still
// serve its own old copies as a stream source. The driver, which marked it (or polled a mark),
// leaves it out of every task instead, and the joining node merges from the other two.
TEST_CASE("needs repair: a node that has not learned it yet is still no stream source",
          "[rebalance][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kGraceMs);
  bool unaware = false;
  cluster.TuneNodes([&](uint32_t id, NodeOptions* o) {
    GraceAlone(id, o);
    if (id != 3 || !unaware) return;
    o->learn_repair_marks_for_test = false;
    // Its background repair polls the marks first too; here it would learn from them.
    o->background_repair = false;
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  const auto gone = Keys("gone", 40);
  DeleteWhileAway(cluster, *client, 3, gone, kGraceMs);
  unaware = true;
  REQUIRE(cluster.RestartNode(3).ok());
  PurgeTombstones(cluster, *client, {1, 2});
  REQUIRE(CounterOf(*client, cluster, 3, "needs_repair") == 0);  // it does not know
  // Node 3 would serve its old copies: it holds every deleted key, and the others none.
  for (const std::string& key : gone) {
    INFO(key);
    REQUIRE(Live(cluster.LocalRead(3, key)));
    REQUIRE_FALSE(Live(cluster.LocalRead(1, key)));
  }

  auto added = cluster.AddStandaloneNode();
  REQUIRE(added.ok());
  auto admin = shardkv::testing::AdminFor({cluster.Address(1), cluster.Address(2)});
  const AdminReply begun =
      admin->Begin(rebalance_test::AddOf(cluster, *added), rebalance_test::RateMb(0));
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());
  auto done = shardkv::testing::WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
  INFO(done.status().ToString());
  REQUIRE(done.ok());
  // No client read here: node 3, which never learns, would coordinate one with its own copy
  // (the design's window between a heal and the node's first poll).
  int back = 0;
  for (const std::string& key : gone) {
    for (uint32_t id : {1u, 2u, *added}) back += Live(cluster.LocalRead(id, key)) ? 1 : 0;
  }
  CHECK(back == 0);
}

TEST_CASE("needs repair: a rebuild clears the mark, on the node and on the nodes that set it",
          "[replication][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kGraceMs);
  bool rebuild = false;
  cluster.TuneNodes([&](uint32_t id, NodeOptions* o) {
    if (id != 3) return;
    // Only the rebuild clears the mark here: node 3's background repair would bring it back too
    // (repair_back_test.cc).
    o->background_repair = false;
    if (!rebuild) return;
    o->rebuild = true;
    o->seeds = {cluster.Address(1), cluster.Address(2)};
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  const auto gone = Keys("gone", 20);
  DeleteWhileAway(cluster, *client, 3, gone, kGraceMs);
  REQUIRE(cluster.RestartNode(3).ok());
  REQUIRE(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  // A plain restart keeps it: the mark is in its own meta column family.
  cluster.StopNode(3);
  REQUIRE(cluster.RestartNode(3).ok());
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 1);
  // Created with the GC rule on: its GC has always waited for repairs.
  CHECK(CounterOf(*client, cluster, 3, "gc_waits_since_ms") == 0);

  cluster.StopNode(3);
  rebuild = true;
  auto rebuilt = cluster.RestartNode(3);
  rebuild = false;
  INFO(rebuilt.ToString());
  REQUIRE(rebuilt.ok());
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 0);
  CHECK(CounterOf(*client, cluster, 3, "rebuilt_at_ms") > 0);
  // Rebuilt in place, its data came from replicas that may have collected by the grace: its GC
  // counts as waiting only since the rebuild (design.md "Needs repair").
  const int64_t waits_since = CounterOf(*client, cluster, 3, "gc_waits_since_ms");
  CHECK(waits_since > 0);
  // The nodes that marked it see its rebuild and forget their marks.
  CHECK(
      Eventually([&] { return !Marks(*client, cluster, 1, 3) && !Marks(*client, cluster, 2, 3); }));
  // It serves again, and it holds none of the deleted keys.
  for (const std::string& key : gone) {
    auto local = cluster.LocalRead(3, key);
    INFO(key << ": " << local.status().ToString());
    CHECK((local.ok() || local.status().IsNotFound()));
    CHECK_FALSE(Live(local));
  }
  CHECK(client->Get(gone[0], Consistency::kAll).status().IsNotFound());
  // Nothing marks it again after another restart.
  cluster.StopNode(3);
  REQUIRE(cluster.RestartNode(3).ok());
  CHECK(CounterOf(*client, cluster, 3, "needs_repair") == 0);
  CHECK(CounterOf(*client, cluster, 3, "gc_waits_since_ms") == waits_since);
  CHECK(client->Get(gone[1], Consistency::kAll).status().IsNotFound());
}

// A node started with --rebuild asks its seeds for the map before it deletes anything: a seed
// that does not answer (or a map that does not name it) refuses the start and keeps the data.
TEST_CASE("rebuild: a node whose seeds do not answer refuses and keeps its data",
          "[replication][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kGraceMs);
  bool rebuild = false;
  cluster.TuneNodes([&](uint32_t id, NodeOptions* o) {
    if (id != 3 || !rebuild) return;
    o->rebuild = true;
    o->seeds = {"127.0.0.1:1"};  // nothing listens on port 1
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  const auto kept = Keys("kept", 10);
  for (const std::string& key : kept) REQUIRE(client->Put(key, "v").ok());
  for (const std::string& key : kept) {
    REQUIRE(Eventually([&] { return Live(cluster.LocalRead(3, key)); }));
  }
  cluster.StopNode(3);
  rebuild = true;
  const Status refused = cluster.RestartNode(3);
  rebuild = false;
  INFO(refused.ToString());
  REQUIRE_FALSE(refused.ok());
  CHECK(Contains(refused.ToString(), "no seed answered"));
  cluster.StopNode(3);
  REQUIRE(cluster.RestartNode(3).ok());
  for (const std::string& key : kept) {
    INFO(key);
    CHECK(Live(cluster.LocalRead(3, key)));
  }
}

TEST_CASE("needs repair: with one replica nothing is refused", "[replication][repair]") {
  // The writes a single replica missed were never acknowledged, and its data is the only copy.
  ClusterParams params = shardkv::testing::ThreeReplicas();
  params.replication_factor = 1;
  params.write_quorum = 1;
  params.read_quorum = 1;
  InProcessCluster cluster(2, params, kGraceMs);
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    const std::string k = "solo" + std::to_string(i);
    if (cluster.map().Replicas(cluster.map().TokenOf(k)) == std::vector<uint32_t>{2}) key = k;
  }
  REQUIRE(client->Put(key, "v").ok());
  cluster.StopNode(2);
  // Coordinated by node 1, which holds no replica: the write fails. A failed write's misses are
  // never hinted (issue 12, scenario 3), so nothing can expire into a mark of node 2.
  net::Request put;
  put.body = net::PutRequest{cluster.map().TokenOf(key), key, "w"};
  auto refused = cluster.Call(1, std::move(put));
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->ok());
  CHECK(CounterOf(*client, cluster, 1, "hints_pending") == 0);
  // A negative check: past the grace and a few polls of the marks, still nothing.
  std::this_thread::sleep_for(std::chrono::milliseconds(kGraceMs) + std::chrono::seconds(3));
  CHECK_FALSE(Marks(*client, cluster, 1, 2));
  REQUIRE(cluster.RestartNode(2).ok());
  CHECK(CounterOf(*client, cluster, 2, "needs_repair") == 0);
  auto local = cluster.LocalRead(2, key);
  INFO(local.status().ToString());
  REQUIRE(local.ok());
  CHECK(local->value == "v");
  CHECK(*client->Get(key) == "v");
}
