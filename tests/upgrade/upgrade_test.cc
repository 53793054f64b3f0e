// Upgrade compatibility: the current code reads data directories written by the previous release
// (v0.1.0, commit 66cb51d). The fixtures in tests/fixtures/v0.1.0-66cb51d/ were written by that
// release's own binaries (tests/fixtures/README.md says how, and what they hold); they must never
// be regenerated with newer code. Every test copies a fixture into a fresh temp dir first, so the
// checked-in files are never opened for writing.
//
// Two fixtures:
//   ring/  - a 3-node ring cluster (R=3 W=2 Q=2) plus node 4 from a completed `cluster add-node`
//            (map epoch 5, its change record in state done). Its map holds the old ephemeral
//            ports, and a member of a multi-node cluster does not move its own address in the map
//            when it binds another port (only a one-node cluster does, node.cc), so these tests
//            read each node's store and map through the storage/map modules, and start each node
//            alone on port 0 and read its own replicas through it at consistency one (the local
//            replica answers; the calls to the old peer addresses fail or are refused by cluster
//            id and change nothing).
//   jump1/ - a 1-node jump cluster (64 shards, R=W=Q=1): restarted on port 0, it moves its address
//            in the map and serves the public Client.
// Both hold key-000..key-049 = value-000..value-049, with key-000 overwritten to value-000-v2 and
// key-005, -015, -025, -035, -045 deleted (tombstones).
#include "upgrade/upgrade_util.h"

using namespace upgrade;

TEST_CASE("upgrade v0.1.0: ring fixture, each node's store and map decode", "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  const auto conf = ReadConf(root + "/cluster.conf");
  CHECK(conf.at("cluster_id") == std::to_string(kRingClusterId));
  CHECK(conf.at("nodes") == "4");
  CHECK(conf.at("mode") == "ring");

  uint64_t content_hash = 0;
  for (uint32_t id = 1; id <= 4; ++id) {
    INFO("node " << id);
    auto store = OpenStore(DbDir(root, id), id);
    cluster::MapStore maps(store.get());
    Status loaded = maps.Load();
    INFO(loaded.ToString());
    REQUIRE(loaded.ok());
    const ClusterMap& map = *maps.Current();

    CHECK(map.cluster_id() == kRingClusterId);
    CHECK(map.epoch() == kRingEpoch);
    CHECK(map.params().mode == PlacementMode::kRing);
    CHECK(map.params().vnodes == 160);
    CHECK(map.params().replication_factor == 3);
    CHECK(map.params().write_quorum == 2);
    CHECK(map.params().read_quorum == 2);
    CHECK(map.EffectiveReplicas() == 3);
    CHECK_FALSE(map.has_pending());
    REQUIRE(map.nodes().size() == 4);
    std::set<std::string> addresses;
    for (uint32_t n = 1; n <= 4; ++n) {
      const ClusterNode* node = map.FindNode(n);
      REQUIRE(node != nullptr);
      CHECK(node->state == NodeState::kUp);
      CHECK(node->weight == 1.0);
      CHECK(node->address.rfind("127.0.0.1:", 0) == 0);
      addresses.insert(node->address);
    }
    CHECK(addresses.size() == 4);
    REQUIRE(map.ring() != nullptr);
    CHECK(map.shard_map() == nullptr);
    if (id == 1) content_hash = map.ContentHash();
    CHECK(map.ContentHash() == content_hash);  // all four nodes hold the same epoch-5 map

    // The finished add-node's record, kept in the map after the change.
    // (0.1.0 wrote it as key=value text; the map decoder read it through the legacy decoder.)
    const shardkv::ChangeRecord* rec = map.change();
    REQUIRE(rec != nullptr);
    CHECK(rec->change_id == kRingChangeId);
    CHECK(rec->kind == ChangeKind::kAdd);
    CHECK(rec->node_id == 4);
    CHECK(rec->state == ChangeState::kDone);
    CHECK(rec->error.empty());
    CHECK(rec->from_epoch == 1);
    CHECK(rec->rate_bytes_per_s == 32u << 20);
    CHECK(rec->streams_per_node == 2);
    CHECK(rec->planned_copies == 35);
    CHECK(rec->planned_tombstones == 3);
    CHECK(rec->planned_bytes == 584);
    CHECK(rec->planned_ranges == 3);
    CHECK(rec->remapped_keys == 35);
    CHECK(rec->live_keys == 45);
    CHECK(rec->total_copies == 135);
    CHECK(rec->ideal_fraction == Approx(0.25));
    CHECK(rec->replicas_configured == 3);
    CHECK(rec->replicas_after == 3);
    CHECK(rec->write_quorum_after == 2);
    CHECK(rec->read_quorum_after == 2);
    CHECK(rec->moved_copies == 35);
    CHECK(rec->moved_bytes == 584);
    CHECK(rec->resumed_tasks == 0);
    CHECK(rec->takeovers == 0);
    CHECK(rec->client_errors == 0);
    CHECK(rec->started_ms > 0);
    CHECK(rec->finished_ms >= rec->started_ms);
    // Re-encoding with this build and decoding again keeps the record.
    auto again = ChangeRecord::Decode(rec->Encode());
    REQUIRE(again.ok());
    CHECK(again->change_id == rec->change_id);
    CHECK(again->moved_copies == rec->moved_copies);

    // Re-encoding the map with this build gives a map equal to the stored one.
    auto reencoded = ClusterMap::Decode(map.Encode());
    REQUIRE(reencoded.ok());
    CHECK(reencoded->epoch() == map.epoch());
    CHECK(reencoded->nodes() == map.nodes());
    REQUIRE(reencoded->change() != nullptr);
    CHECK(reencoded->change()->change_id == kRingChangeId);
    CHECK(reencoded->change()->moved_copies == rec->moved_copies);
    CHECK(reencoded->ContentHash() == map.ContentHash());

    CheckNodeKeys(*store, map, id);
    REQUIRE(store->Close().ok());
  }
}

TEST_CASE("upgrade v0.1.0: ring fixture, every live key has three copies across the nodes",
          "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  std::map<std::string, int> copies;
  std::map<std::string, int> tombstones;
  for (uint32_t id = 1; id <= 4; ++id) {
    auto store = OpenStore(DbDir(root, id), id);
    for (const storage::RangeEntry& e : ScanAll(*store)) {
      (e.envelope.tombstone ? tombstones : copies)[e.key]++;
    }
    REQUIRE(store->Close().ok());
  }
  CHECK(copies.size() == kKeyCount - kDeleted.size());
  CHECK(tombstones.size() == kDeleted.size());
  for (int i = 0; i < kKeyCount; ++i) {
    INFO(Key(i));
    if (kDeleted.count(i)) {
      CHECK(tombstones[Key(i)] == 3);
      CHECK(copies.count(Key(i)) == 0);
    } else {
      CHECK(copies[Key(i)] == 3);
      CHECK(tombstones.count(Key(i)) == 0);
    }
  }
}

TEST_CASE("upgrade v0.1.0: ring fixture, each node starts on port 0 and serves its replicas",
          "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  for (uint32_t id = 1; id <= 4; ++id) {
    INFO("node " << id);
    auto node = Node::Start(FixtureNodeOptions(root, id, kRingClusterId));
    INFO(node.status().ToString());
    REQUIRE(node.ok());
    CHECK((*node)->port() != 0);

    net::RpcClient rpc((*node)->address());
    net::Request get_map;
    get_map.cluster_id = kRingClusterId;
    get_map.body = net::GetClusterMapRequest{};
    auto map_reply = rpc.CallSync(std::move(get_map), std::chrono::seconds(10));
    REQUIRE(map_reply.ok());
    REQUIRE(map_reply->ok());
    const auto* map_body = std::get_if<net::GetClusterMapResponse>(&map_reply->body);
    REQUIRE(map_body != nullptr);
    auto map = ClusterMap::Decode(map_body->map);
    INFO(map.status().ToString());
    REQUIRE(map.ok());
    CHECK(map->cluster_id() == kRingClusterId);
    CHECK(map->epoch() >= kRingEpoch);
    CHECK(map->nodes().size() == 4);

    size_t served = 0;
    for (int i = 0; i < kKeyCount; ++i) {
      const std::string key = Key(i);
      const uint64_t token = map->TokenOf(key);
      const auto replicas = map->ReadReplicas(token);
      if (std::find(replicas.begin(), replicas.end(), id) == replicas.end()) continue;
      INFO(key);
      net::Request req;
      req.cluster_id = kRingClusterId;
      req.epoch = map->epoch();
      req.consistency = net::Consistency::kOne;  // this node's own copy answers
      req.body = net::GetRequest{token, key};
      auto reply = rpc.CallSync(std::move(req), std::chrono::seconds(10));
      INFO(reply.status().ToString());
      REQUIRE(reply.ok());
      INFO(reply->status().ToString());
      REQUIRE(reply->ok());
      const auto* got = std::get_if<net::GetResponse>(&reply->body);
      REQUIRE(got != nullptr);
      if (kDeleted.count(i)) {
        CHECK_FALSE(got->found);
      } else {
        CHECK(got->found);
        CHECK(got->value == ExpectedValue(i));
      }
      ++served;
    }
    CHECK(served > 0);
    (*node)->Stop();
  }
}

TEST_CASE("upgrade v0.1.0: one-node jump fixture, store and map decode", "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "jump1");
  const auto conf = ReadConf(root + "/cluster.conf");
  CHECK(conf.at("cluster_id") == std::to_string(kJumpClusterId));
  CHECK(conf.at("mode") == "jump");
  CHECK(conf.at("shards") == "64");

  auto store = OpenStore(DbDir(root, 1), 1);
  cluster::MapStore maps(store.get());
  Status loaded = maps.Load();
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  const ClusterMap& map = *maps.Current();
  CHECK(map.cluster_id() == kJumpClusterId);
  CHECK(map.epoch() == 1);
  CHECK(map.params().mode == PlacementMode::kJump);
  CHECK(map.params().shards == 64);
  CHECK(map.params().replication_factor == 1);
  CHECK(map.params().write_quorum == 1);
  CHECK(map.params().read_quorum == 1);
  CHECK_FALSE(map.has_pending());
  CHECK(map.change() == nullptr);  // no membership change was ever made
  REQUIRE(map.nodes().size() == 1);
  CHECK(map.nodes()[0].id == 1);
  REQUIRE(map.shard_map() != nullptr);
  CHECK(map.ring() == nullptr);
  for (int i = 0; i < kKeyCount; ++i) {
    // A jump token is (shard << 32) | low 32 bits of the key hash: the shard is in range.
    CHECK((map.TokenOf(Key(i)) >> 32) < 64);
  }
  CheckNodeKeys(*store, map, 1);
  REQUIRE(store->Close().ok());
}

TEST_CASE(
    "upgrade v0.1.0: one-node jump fixture serves the client on a new port, also after "
    "this build wrote to it",
    "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "jump1");
  uint64_t first_epoch = 0;
  {
    auto node = Node::Start(FixtureNodeOptions(root, 1, kJumpClusterId));
    INFO(node.status().ToString());
    REQUIRE(node.ok());
    auto client = ConnectClient(**node, kJumpClusterId);
    // A one-node cluster moves its own address in the map when it binds another port.
    auto map = client->map();
    REQUIRE(map != nullptr);
    REQUIRE(map->nodes().size() == 1);
    CHECK(map->nodes()[0].address == (*node)->address());
    CHECK(map->epoch() > 1);
    first_epoch = map->epoch();

    std::vector<std::string> keys;
    for (int i = 0; i < kKeyCount; ++i) keys.push_back(Key(i));
    auto got = client->MultiGet(keys);
    REQUIRE(got.size() == keys.size());
    for (int i = 0; i < kKeyCount; ++i) {
      INFO(Key(i));
      auto one = client->Get(Key(i));
      if (kDeleted.count(i)) {
        CHECK(got[i].status().IsNotFound());
        CHECK(one.status().IsNotFound());
      } else {
        REQUIRE(got[i].ok());
        CHECK(*got[i] == ExpectedValue(i));
        REQUIRE(one.ok());
        CHECK(*one == ExpectedValue(i));
      }
    }
    // This build writes over and next to the old data; the second start reads it back.
    REQUIRE(client->Put("key-001", "value-001-new").ok());
    REQUIRE(client->Put("key-005", "value-005-revived").ok());
    REQUIRE(client->Put("new-key", "new-value").ok());
    REQUIRE(client->Delete("key-002").ok());
    client.reset();
    (*node)->Stop();
  }
  auto node = Node::Start(FixtureNodeOptions(root, 1, kJumpClusterId));
  INFO(node.status().ToString());
  REQUIRE(node.ok());
  auto client = ConnectClient(**node, kJumpClusterId);
  CHECK(client->map()->epoch() > first_epoch);
  CHECK(client->map()->nodes()[0].address == (*node)->address());
  CHECK(*client->Get("key-001") == "value-001-new");
  CHECK(*client->Get("key-005") == "value-005-revived");
  CHECK(*client->Get("new-key") == "new-value");
  CHECK(client->Get("key-002").status().IsNotFound());
  CHECK(client->Get("key-015").status().IsNotFound());
  CHECK(*client->Get("key-000") == "value-000-v2");
  CHECK(*client->Get("key-049") == "value-049");
}
