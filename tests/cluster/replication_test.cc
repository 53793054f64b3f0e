// In-process 3-node clusters: replication, quorums, hinted handoff, read repair, map
// propagation and fencing. Fast enough for the sanitizer build.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "clustermap/cluster_map_builder.h"
#include "common/hlc.h"
#include "testing/cluster_util.h"
#include "testing/history_checker.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"
#include "testing/time_scale.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

namespace {

using shardkv::testing::Eventually;

ClusterParams Params(PlacementMode mode = PlacementMode::kRing) {
  return shardkv::testing::ThreeReplicas(mode);
}

std::unique_ptr<Client> Connect(const InProcessCluster& c, uint32_t timeout_ms = 5000) {
  return shardkv::testing::MustConnect(c, timeout_ms);
}

std::unique_ptr<Client> ConnectVia(const InProcessCluster& c, uint32_t id) {
  return shardkv::testing::MustConnect(c, 5000, id);
}

// The sum of counter `name` over nodes `ids` (-1 if a node did not answer).
int64_t SumCounter(Client& client, const InProcessCluster& c, std::vector<uint32_t> ids,
                   const std::string& name) {
  int64_t sum = 0;
  for (uint32_t id : ids) {
    auto stats = client.NodeStats(c.Address(id));
    if (!stats.ok()) return -1;
    sum += stats->counters[name];
  }
  return sum;
}

}  // namespace

TEST_CASE("cluster: writes reach every replica, in both modes", "[replication]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    InProcessCluster cluster(3, Params(mode));
    REQUIRE(cluster.Start().ok());
    auto client = Connect(cluster);
    CHECK(client->map()->nodes().size() == 3);
    for (int i = 0; i < 50; ++i) {
      REQUIRE(client->Put("k" + std::to_string(i), "v" + std::to_string(i)).ok());
    }
    for (int i = 0; i < 50; ++i) {
      const std::string key = "k" + std::to_string(i);
      CHECK(*client->Get(key) == "v" + std::to_string(i));
      // W = 2 acks answer the client; the third replica gets the write in the same fan-out.
      for (uint32_t id = 1; id <= 3; ++id) {
        CHECK(Eventually([&] {
          auto local = cluster.LocalRead(id, key);
          return local.ok() && local->value == "v" + std::to_string(i);
        }));
      }
    }
  }
}

TEST_CASE("cluster: one node down keeps quorum, hints repair it when back", "[replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  cluster.StopNode(3);
  for (int i = 0; i < 100; ++i) {
    auto put = client->Put("h" + std::to_string(i), "x" + std::to_string(i));
    INFO(put.status().ToString());
    REQUIRE(put.ok());
  }
  REQUIRE(client->Delete("h0").ok());
  for (int i = 1; i < 100; ++i)
    CHECK(*client->Get("h" + std::to_string(i)) == "x" + std::to_string(i));
  CHECK(client->Get("h0").status().IsNotFound());
  CHECK(SumCounter(*client, cluster, {1, 2}, "hints_pending") >= 100);

  REQUIRE(cluster.RestartNode(3).ok());
  // Hints replay once gossip sees node 3 again: every key reaches it, the delete included.
  CHECK(Eventually([&] {
    for (int i = 1; i < 100; ++i) {
      auto local = cluster.LocalRead(3, "h" + std::to_string(i));
      if (!local.ok() || local->value != "x" + std::to_string(i)) return false;
    }
    auto gone = cluster.LocalRead(3, "h0");
    return gone.ok() && gone->tombstone;
  }));
  CHECK(Eventually([&] { return SumCounter(*client, cluster, {1, 2}, "hints_pending") == 0; }));
}

TEST_CASE("cluster: two nodes down fails quorum with the replicas named", "[replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster, 3000);
  REQUIRE(client->Put("before", "1").ok());
  cluster.StopNode(2);
  cluster.StopNode(3);
  auto put = client->Put("after", "2");
  REQUIRE_FALSE(put.ok());
  CHECK(put.status().code() == Status::Code::kUnavailable);
  INFO(put.status().message());
  CHECK(put.status().message().find("quorum") != std::string::npos);
  CHECK(put.status().message().find("node 2") != std::string::npos);
  CHECK(put.status().message().find("node 3") != std::string::npos);
  auto get = client->Get("before");
  CHECK(get.status().code() == Status::Code::kUnavailable);
  // Consistency one still works with one replica left.
  CHECK(*client->Get("before", Consistency::kOne) == "1");
  CHECK(client->Put("one", "x", Consistency::kOne).ok());
}

// Issue 12, scenario 3: a hint of a write reported as failed, replayed after a restart, carried
// that write's version over later acknowledged ones. Only an acknowledged write's misses are
// hinted now.
TEST_CASE("cluster: the misses of a failed write are not hinted", "[replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = ConnectVia(cluster, 1);
  cluster.StopNode(3);
  // Acknowledged by nodes 1 and 2: node 3's miss is hinted (the control).
  REQUIRE(client->Put("acked-key", "a").ok());
  cluster.StopNode(2);
  // Only node 1 takes it: reported failed, and nodes 2 and 3 get no hint of it.
  auto failed = client->Put("failed-key", "f");
  REQUIRE_FALSE(failed.ok());
  INFO(failed.status().ToString());
  CHECK(failed.status().message().find("write quorum not reached") != std::string::npos);
  CHECK(SumCounter(*client, cluster, {1}, "hints_not_written") >= 2);
  REQUIRE(cluster.RestartNode(2).ok());
  REQUIRE(cluster.RestartNode(3).ok());
  // Hint replay has run once the control arrived and nothing is pending.
  CHECK(Eventually([&] {
    auto l = cluster.LocalRead(3, "acked-key");
    return l.ok() && l->value == "a";
  }));
  CHECK(Eventually([&] { return SumCounter(*client, cluster, {1}, "hints_pending") == 0; }));
  for (uint32_t id : {2u, 3u}) {
    INFO("node " << id);
    CHECK(cluster.LocalRead(id, "failed-key").status().code() == Status::Code::kNotFound);
  }
}

TEST_CASE("cluster: a quorum read repairs a stale replica", "[replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  REQUIRE(client->Put("r", "old").ok());
  REQUIRE(Eventually([&] {
    auto l = cluster.LocalRead(3, "r");
    return l.ok() && l->value == "old";
  }));
  auto old_version = cluster.LocalRead(1, "r");
  REQUIRE(old_version.ok());
  // Make nodes 1 and 2 newer behind node 3's back.
  for (uint32_t id : {1u, 2u}) {
    net::Request req;
    req.body = net::ReplicaWriteRequest{
        cluster.map().TokenOf("r"), "r", old_version->ts + 1, 9, false, "new", {}};
    auto reply = cluster.Call(id, std::move(req));
    REQUIRE(reply.ok());
    REQUIRE(reply->ok());
  }
  CHECK(*client->Get("r", Consistency::kAll) == "new");
  CHECK(Eventually([&] {
    auto l = cluster.LocalRead(3, "r");
    return l.ok() && l->value == "new";
  }));
}

TEST_CASE("cluster: a newer map spreads by gossip, old-epoch clients are told", "[membership]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  const uint64_t epoch = client->map()->epoch();
  auto next = clustermap::WithEpoch(cluster.map(), epoch + 1, 1);
  net::Request req;
  req.body = net::InstallMapRequest{next.Encode(), epoch, false};
  auto reply = cluster.Call(1, std::move(req));
  REQUIRE(reply.ok());
  INFO(reply->status().ToString());
  REQUIRE(reply->ok());
  // A compare-and-set on a stale expected epoch is refused.
  net::Request stale;
  stale.body = net::InstallMapRequest{clustermap::WithEpoch(next, epoch + 2, 1).Encode(),
                                      epoch - 1 + 100, false};
  auto refused = cluster.Call(2, std::move(stale));
  REQUIRE(refused.ok());
  CHECK(refused->status().code() == Status::Code::kAborted);
  // Nodes 2 and 3 learn epoch+1 from gossip.
  CHECK(Eventually([&] {
    for (uint32_t id : {2u, 3u}) {
      net::Request ping;
      ping.body = net::PingRequest{};
      auto pong = cluster.Call(id, std::move(ping));
      if (!pong.ok() || pong->epoch != epoch + 1) return false;
    }
    return true;
  }));
  // The client still routes by the old map; the first reply brings it the new one.
  REQUIRE(client->Put("x", "y").ok());
  CHECK(client->map()->epoch() == epoch + 1);
}

TEST_CASE("cluster: replica writes from an older epoch are fenced", "[membership]") {
  ClusterParams p;
  p.replication_factor = 1;
  p.write_quorum = p.read_quorum = 1;
  InProcessCluster cluster(3, p);
  REQUIRE(cluster.Start().ok());
  // Move every node to epoch 2 so that an epoch-1 sender is stale.
  auto next = clustermap::WithEpoch(cluster.map(), 2, 1);
  for (uint32_t id = 1; id <= 3; ++id) {
    net::Request req;
    req.body = net::InstallMapRequest{next.Encode(), 1, false};
    auto r = cluster.Call(id, std::move(req));
    REQUIRE(r.ok());
    REQUIRE(r->ok());
  }
  // Find a key that node 1 does not own.
  std::string key;
  for (int i = 0; key.empty(); ++i) {
    const std::string k = "f" + std::to_string(i);
    if (next.Replicas(next.TokenOf(k)).front() != 1) key = k;
  }
  net::Request req;
  req.epoch = 1;
  req.body = net::ReplicaWriteRequest{next.TokenOf(key), key, 1, 5, false, "fenced", {}};
  auto reply = cluster.Call(1, std::move(req));
  REQUIRE(reply.ok());
  CHECK(reply->status().code() == Status::Code::kStaleEpoch);
  CHECK_FALSE(reply->cluster_map.empty());  // the refusal carries the newer map
}

TEST_CASE("cluster: history holds while nodes stop and restart", "[replication][history]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    InProcessCluster cluster(3, Params(mode));
    REQUIRE(cluster.Start().ok());
    ClientOptions co;
    co.seeds = cluster.Addresses();
    co.timeout_ms = 5000;
    shardkv::testing::HistoryOptions ho;
    ho.keys = 60;
    ho.duration = std::chrono::milliseconds(4000);
    ho.seed = mode == PlacementMode::kRing ? 7 : 8;
    shardkv::testing::HistoryChecker checker(co, ho);
    REQUIRE(checker.Start().ok());
    // Stop and restart a node at a time while the workload runs (bounded waits throughout).
    REQUIRE(
        checker.WaitUntil([](const auto& s) { return s.acked >= 200; }, std::chrono::seconds(20)));
    cluster.StopNode(2);
    REQUIRE(
        checker.WaitUntil([](const auto& s) { return s.acked >= 600; }, std::chrono::seconds(20)));
    REQUIRE(cluster.RestartNode(2).ok());
    REQUIRE(
        checker.WaitUntil([](const auto& s) { return s.acked >= 1000; }, std::chrono::seconds(20)));
    cluster.StopNode(3);
    REQUIRE(
        checker.WaitUntil([](const auto& s) { return s.acked >= 1400; }, std::chrono::seconds(20)));
    REQUIRE(cluster.RestartNode(3).ok());
    checker.Wait();
    const auto stats = checker.stats();
    INFO("acked " << stats.acked << " failed " << stats.failed << " last error "
                  << stats.last_error);
    CHECK(checker.Violations().empty());
    Status final_check = checker.FinalCheck();
    INFO(final_check.ToString());
    CHECK(final_check.ok());
    // One node down at a time never costs a quorum: no client-visible failure.
    CHECK(stats.failed == 0);
  }
}

TEST_CASE("cluster: deleted keys stay deleted after tombstone GC", "[replication][history]") {
  // A grace of one second: tombstones become collectable almost at once. Under TSan
  // (TimeScale() > 1) 20 s: a node there stalls past its peers' 1 s RPC ping for seconds, they
  // hint its writes, and a hint not replayed within the grace marks it as needing repair (seen
  // with 5 s), which the final check then fails on.
  const uint64_t grace_ms = testing::TimeScale() > 1 ? testing::ScaledMs(uint64_t{4000}) : 1000;
  InProcessCluster cluster(3, Params(), grace_ms);
  REQUIRE(cluster.Start().ok());
  ClientOptions co;
  co.seeds = cluster.Addresses();
  shardkv::testing::HistoryOptions ho;
  ho.keys = 40;
  ho.delete_fraction = 0.3;
  ho.duration = std::chrono::milliseconds(1500);
  shardkv::testing::HistoryChecker checker(co, ho);
  REQUIRE(checker.Start().ok());
  checker.Wait();
  REQUIRE(checker.FinalCheck().ok());
  // Wait out the grace, then compact every node until each has collected tombstones.
  REQUIRE(Eventually(
      [&] {
        for (uint32_t id = 1; id <= 3; ++id) {
          auto dropped = cluster.node(id)->Compact();
          if (!dropped.ok() || *dropped == 0) return false;
        }
        return true;
      },
      std::chrono::seconds(20)));
  Status after_gc = checker.FinalCheck();
  INFO(after_gc.ToString());
  CHECK(after_gc.ok());
  CHECK(checker.Violations().empty());
}

TEST_CASE("cluster: hints for a node that left the cluster are deleted", "[replication]") {
  // Issue 12, finding 7: hints for a removed node were skipped by replay but never deleted, so
  // hints_pending stayed up and tombstone GC stayed suspended for good.
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  cluster.StopNode(3);
  for (int i = 0; i < 50; ++i) REQUIRE(client->Put("gone" + std::to_string(i), "x").ok());
  auto pending = [&] { return SumCounter(*client, cluster, {1, 2}, "hints_pending"); };
  REQUIRE(pending() >= 50);
  // A map without node 3, installed on the two live nodes (what `remove-node 3` commits in
  // the end, without the streams: node 3 is down and its data is not needed here).
  auto leaving = clustermap::WithNodeLeaving(cluster.map(), 3);
  REQUIRE(leaving.ok());
  auto removed = clustermap::WithChangeCommitted(*leaving);
  INFO(removed.status().ToString());
  REQUIRE(removed.ok());
  const uint64_t epoch = client->map()->epoch();
  const ClusterMap next = clustermap::WithEpoch(*removed, epoch + 1, 1);
  REQUIRE(next.FindNode(3) == nullptr);
  for (uint32_t id : {1u, 2u}) {
    net::Request req;
    req.body = net::InstallMapRequest{next.Encode(), epoch, false};
    auto r = cluster.Call(id, std::move(req));
    REQUIRE(r.ok());
    INFO(r->status().ToString());
    REQUIRE(r->ok());
  }
  CHECK(Eventually([&] { return pending() == 0; }));
  CHECK(SumCounter(*client, cluster, {1, 2}, "hints_discarded") >= 50);
  // The data is still there on the two replicas that stayed.
  CHECK(*client->Get("gone0") == "x");
}

TEST_CASE("cluster: a write is re-stamped above a newer version a replica holds", "[replication]") {
  // Issue 12, "a later acknowledged write always wins": a version stamped by a clock ahead of
  // the coordinator's (here planted 300 ms ahead, within max_clock_offset, on the two replicas
  // that do not coordinate) used to win over a put acknowledged after it, because "superseded"
  // replies counted as acks.
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = ConnectVia(cluster, 1);
  const ClusterMap& map = *client->map();
  // Keys whose first replica is node 1, so node 1 coordinates them (the client sends there).
  std::vector<std::string> keys;
  for (int i = 0; keys.size() < 2 && i < 10000; ++i) {
    const std::string k = "ahead" + std::to_string(i);
    if (map.ReadReplicas(map.TokenOf(k)).front() == 1) keys.push_back(k);
  }
  REQUIRE(keys.size() == 2);
  auto plant = [&](const std::string& key, const std::string& value) {
    // Node 1's clock does not see it: the planted version is only on nodes 2 and 3.
    const uint64_t ahead = common::HlcClock::Make(common::HlcClock::WallClockMs() + 300, 0);
    for (uint32_t id : {2u, 3u}) {
      net::Request req;
      req.epoch = map.epoch();
      req.body = net::ReplicaWriteRequest{map.TokenOf(key), key, ahead, 2, false, value, {}};
      auto r = cluster.Call(id, std::move(req));
      REQUIRE(r.ok());
      INFO(r->status().ToString());
      REQUIRE(r->ok());
    }
    return ahead;
  };
  const uint64_t ahead = plant(keys[0], "from a fast clock");
  auto put = client->Put(keys[0], "acknowledged later");
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  CHECK(*put > ahead);
  CHECK(*client->Get(keys[0]) == "acknowledged later");
  CHECK(*client->Get(keys[0], Consistency::kAll) == "acknowledged later");
  auto stats = client->NodeStats(cluster.Address(1));
  REQUIRE(stats.ok());
  CHECK(stats->counters["writes_restamped"] >= 1);
  // A delete goes the same way.
  plant(keys[1], "fast again");
  REQUIRE(client->Delete(keys[1]).ok());
  CHECK(client->Get(keys[1]).status().IsNotFound());
  CHECK(client->Get(keys[1], Consistency::kAll).status().IsNotFound());
}

TEST_CASE("cluster: a client drops a session timestamp a node refuses and carries on",
          "[replication]") {
  // Issue 12, finding 4: one skewed node's timestamps, relayed by clients, made healthy nodes
  // refuse those clients ("client timestamp rejected", not retried). Here node 3 allows only
  // 50 ms of offset while node 1 accepts a version planted 300 ms ahead, so a client that wrote
  // through node 1 carries a timestamp node 3 refuses (for the next ~400 ms: the test needs far
  // less, and node 3's refusal is counted below, so a slow run cannot pass without it).
  ClusterParams p = Params();
  InProcessCluster cluster(3, p);
  cluster.TuneNodes([](uint32_t id, NodeOptions* o) {
    if (id == 3) o->max_clock_offset_ms = 50;
  });
  REQUIRE(cluster.Start().ok());
  auto client = ConnectVia(cluster, 1);
  // A key whose first replica is node 1 (the client sends there), planted 450 ms ahead on
  // node 1 alone: the put through node 1 is re-stamped above it, and its reply carries node 1's
  // clock, now about 450 ms ahead.
  std::string key;
  for (int i = 0; key.empty() && i < 10000; ++i) {
    const std::string k = "skew" + std::to_string(i);
    if (client->map()->ReadReplicas(client->map()->TokenOf(k)).front() == 1) key = k;
  }
  REQUIRE(!key.empty());
  const uint64_t ahead = common::HlcClock::Make(common::HlcClock::WallClockMs() + 450, 0);
  net::Request plant;
  plant.epoch = client->map()->epoch();
  plant.body =
      net::ReplicaWriteRequest{client->map()->TokenOf(key), key, ahead, 1, false, "planted", {}};
  REQUIRE(cluster.Call(1, std::move(plant)).ok());
  REQUIRE(client->Put(key, "through node 1", Consistency::kOne).ok());
  REQUIRE(client->max_seen_timestamp() > ahead);
  // Node 3 refuses that timestamp; the client drops it and the request runs.
  std::string on3;
  for (int i = 0; on3.empty() && i < 10000; ++i) {
    const std::string k = "three" + std::to_string(i);
    if (client->map()->ReadReplicas(client->map()->TokenOf(k)).front() == 3) on3 = k;
  }
  REQUIRE(!on3.empty());
  auto put = client->Put(on3, "through node 3");
  INFO(put.status().ToString());
  CHECK(put.ok());
  CHECK(client->max_seen_timestamp() < ahead);
  auto get = client->Get(on3);
  INFO(get.status().ToString());
  CHECK(get.ok());
  auto stats = client->NodeStats(cluster.Address(3));
  REQUIRE(stats.ok());
  CHECK(stats->counters["client_errors"] >= 1);  // node 3 did refuse the relayed timestamp
}

TEST_CASE("cluster: a replica write past its coordinator's deadline is dropped, not applied late",
          "[replication]") {
  InProcessCluster cluster(3, testing::ThreeReplicas());
  REQUIRE(cluster.Start().ok());
  const uint64_t token = cluster.map().TokenOf("late");
  const uint64_t now = common::HlcClock::WallClockMs();
  auto send = [&](uint64_t deadline_ms, const std::string& value, uint64_t ts) {
    net::Request req;
    req.epoch = cluster.map().epoch();
    req.deadline_ms = deadline_ms;
    req.body = net::ReplicaWriteRequest{token, "late", ts, 1, false, value, {}};
    return cluster.Call(1, std::move(req));
  };
  // Its coordinator gave up 5 s ago, far past the clocks' allowed offset (500 ms).
  auto late = send(now - 5000, "late-value", (now - 5000) << 16);
  REQUIRE(late.ok());
  CHECK(late->status().code() == Status::Code::kTimeout);
  CHECK_THAT(late->status().message(), Catch::Contains("after its coordinator's deadline"));
  CHECK(cluster.LocalRead(1, "late").status().code() == Status::Code::kNotFound);
  // Within the allowed offset of the deadline, and before it, it is applied.
  auto skewed = send(now - 200, "v1", now << 16);
  REQUIRE(skewed.ok());
  CHECK(skewed->ok());
  auto on_time = send(now + 1000, "v2", (now + 1) << 16);
  REQUIRE(on_time.ok());
  CHECK(on_time->ok());
  auto stored = cluster.LocalRead(1, "late");
  REQUIRE(stored.ok());
  CHECK(stored->value == "v2");
  // Without a deadline (a sender that does not trust the receiver's clock), always applied.
  auto none = send(0, "v3", (now + 2) << 16);
  REQUIRE(none.ok());
  CHECK(none->ok());
}
