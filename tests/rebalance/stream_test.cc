// The local pieces of streaming: the source's snapshot renewal and the destination's drop of
// leftovers before a new change's joint writes (design.md "Rebalancing", steps 2 and 3).
#include <atomic>
#include <catch2/catch.hpp>

#include "cluster/map_store.h"
#include "clustermap/cluster_map_builder.h"
#include "rebalance/plan.h"
#include "rebalance/reconciler.h"
#include "rebalance/stream_source.h"
#include "shardkv/change.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

using namespace shardkv;

namespace {

ClusterMap ThreeNodeMap() {
  auto m = ClusterMap::Create(5, {},
                              {{1, "127.0.0.1:1", 1, NodeState::kUp},
                               {2, "127.0.0.1:2", 1, NodeState::kUp},
                               {3, "127.0.0.1:3", 1, NodeState::kUp}},
                              1);
  REQUIRE(m.ok());
  return *m;
}

}  // namespace

TEST_CASE("stream source: a snapshot older than grace/2 is renewed from the cursor",
          "[rebalance][stream]") {
  shardkv::testing::TempDir dir;
  auto now_ms = std::make_shared<std::atomic<uint64_t>>(1'800'000'000'000);
  storage::StorageOptions so;
  so.node_id = 1;
  so.tombstone_grace_ms = 10'000;
  so.physical_clock_ms = [now_ms] { return now_ms->load(); };
  auto storage = storage::Storage::Open(dir.Sub("db"), so);
  REQUIRE(storage.ok());
  cluster::MapStore maps(storage->get());
  REQUIRE(maps.Reset(ThreeNodeMap()).ok());
  for (int i = 0; i < 10; ++i) {
    REQUIRE((*storage)->Put(uint64_t{100} + i, "k" + std::to_string(i), "v").ok());
  }
  rebalance::StreamSource source(1, storage->get(), &maps);
  net::StreamScanRequest req;
  req.stream_id = 7;
  req.first = 0;
  req.last = UINT64_MAX;
  req.max_entries = 4;
  req.max_bytes = 1 << 20;
  auto first = std::get<net::StreamScanResponse>(source.Scan(req));
  CHECK(first.entries.size() == 4);
  CHECK_FALSE(first.snapshot_renewed);
  // Written after the snapshot: invisible to this stream until the snapshot is renewed.
  REQUIRE((*storage)->Put(200, "late", "v").ok());
  req.cursor = first.cursor;
  auto second = std::get<net::StreamScanResponse>(source.Scan(req));
  CHECK_FALSE(second.snapshot_renewed);
  CHECK(second.entries.size() == 4);
  now_ms->fetch_add(5'001);  // past grace / 2
  req.cursor = second.cursor;
  req.max_entries = 100;
  auto third = std::get<net::StreamScanResponse>(source.Scan(req));
  CHECK(third.snapshot_renewed);
  CHECK(third.done);
  // Continued from the cursor (no entry twice) and now sees the late write.
  REQUIRE(third.entries.size() == 3);
  CHECK(third.entries.back().key == "late");
  source.Close();
}

TEST_CASE("reconciler: a destination drops leftovers before a new change is published",
          "[rebalance][stream]") {
  shardkv::testing::TempDir dir;
  storage::StorageOptions so;
  so.node_id = 4;
  auto storage = storage::Storage::Open(dir.Sub("db"), so);
  REQUIRE(storage.ok());
  cluster::MapStore maps(storage->get());
  rebalance::Reconciler reconciler(4, storage->get());
  reconciler.Attach(&maps);
  reconciler.Start();
  const ClusterMap base = ThreeNodeMap();
  // Like a fresh node: a standalone one-node cluster of its own until a cluster adopts it.
  ClusterParams solo;
  solo.replication_factor = solo.write_quorum = solo.read_quorum = 1;
  auto standalone = ClusterMap::Create(77, solo, {{4, "127.0.0.1:4", 1, NodeState::kUp}}, 4);
  REQUIRE(standalone.ok());
  REQUIRE(maps.Reset(*standalone).ok());
  // Node 4 is not a member yet but holds stray data everywhere (an earlier, cancelled attempt).
  for (int i = 0; i < 2000; ++i) {
    REQUIRE((*storage)
                ->Put(base.TokenOf("k" + std::to_string(i)), "k" + std::to_string(i), "old")
                .ok());
  }
  auto joining = clustermap::WithNodeJoining(base, {4, "127.0.0.1:4", 1, NodeState::kJoining});
  REQUIRE(joining.ok());
  ChangeRecord rec;
  rec.change_id = 99;
  rec.kind = ChangeKind::kAdd;
  rec.node_id = 4;
  rec.state = ChangeState::kStreaming;
  const ClusterMap e2 = clustermap::WithEpoch(clustermap::WithChange(*joining, rec), 2, 1);
  REQUIRE(maps.Reset(e2).ok());
  // Nothing is left in the ranges it streams into (leftovers) nor anywhere else (it held
  // nothing under its old standalone view of the world: the install dropped it as lost).
  const auto incoming = rebalance::DestinationRanges(e2, 4);
  REQUIRE_FALSE(incoming.empty());
  for (int i = 0; i < 2000; ++i) {
    const std::string key = "k" + std::to_string(i);
    CHECK((*storage)->GetEnvelope(e2.TokenOf(key), key).status().IsNotFound());
  }
  // A resumed change (same id) keeps what was streamed: no second drop.
  REQUIRE((*storage)->Put(e2.TokenOf("k1"), "k1", "streamed").ok());
  const ClusterMap e3 = clustermap::WithEpoch(e2, 3, 2);
  REQUIRE(maps.Install(e3).ok());
  if (e3.Holds(4, e3.TokenOf("k1"))) {
    CHECK(*(*storage)->Get(e3.TokenOf("k1"), "k1") == "streamed");
  }
  reconciler.Stop();
}
