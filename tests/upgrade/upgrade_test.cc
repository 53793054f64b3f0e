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
#include <rocksdb/db.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cluster/map_store.h"
#include "net/messages.h"
#include "net/rpc_client.h"
#include "clustermap/change_record.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/node.h"
#include "shardkv/options.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::testing::TempDir;
namespace fs = std::filesystem;

namespace {

const std::string kFixtureRoot = std::string(SHARDKV_FIXTURES_DIR) + "/v0.1.0-66cb51d";

// What the fixtures were generated with (tests/fixtures/README.md).
constexpr uint64_t kRingClusterId = 6138709456063951309ull;
constexpr uint64_t kRingEpoch = 5;
constexpr uint64_t kRingChangeId = 16818502549676216535ull;
constexpr uint64_t kJumpClusterId = 6712528135234328663ull;
constexpr int kKeyCount = 50;
const std::set<int> kDeleted = {5, 15, 25, 35, 45};

// Keep every tombstone whatever the wall clock says when the test runs: the fixtures' deletes
// are older than any grace by then.
constexpr uint64_t kHugeGraceMs = kMaxTombstoneGraceSeconds * 1000;

std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "key-%03d", i);
  return buf;
}

std::string ExpectedValue(int i) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "value-%03d", i);
  return i == 0 ? std::string(buf) + "-v2" : std::string(buf);
}

// Copies fixture `name` (ring or jump1) into `dir`; returns the copy's root.
std::string CopyFixture(const TempDir& dir, const std::string& name) {
  REQUIRE_FALSE(dir.path().empty());
  const fs::path src = fs::path(kFixtureRoot) / name;
  REQUIRE(fs::is_directory(src));
  const fs::path dst = fs::path(dir.path()) / name;
  std::error_code ec;
  fs::copy(src, dst, fs::copy_options::recursive, ec);
  INFO(ec.message());
  REQUIRE_FALSE(ec);
  // A checkout may leave files read-only; the code under test writes to its copy.
  for (const auto& entry : fs::recursive_directory_iterator(dst)) {
    fs::permissions(entry.path(), fs::perms::owner_read | fs::perms::owner_write,
                    fs::perm_options::add, ec);
  }
  return dst.string();
}

std::string NodeDir(const std::string& root, uint32_t id) {
  return root + "/node-" + std::to_string(id);
}
std::string DbDir(const std::string& root, uint32_t id) { return NodeDir(root, id) + "/db"; }

std::unique_ptr<Storage> OpenStore(const std::string& db, uint32_t node_id) {
  StorageOptions so;
  so.create_if_missing = false;
  so.node_id = node_id;
  so.tombstone_grace_ms = kHugeGraceMs;
  so.block_cache_bytes = size_t{1} << 20;
  auto s = Storage::Open(db, so);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s).value();
}

// `key=value` lines of a cluster.conf written by the old CLI.
std::map<std::string, std::string> ReadConf(const std::string& path) {
  std::ifstream in(path);
  REQUIRE(in);
  std::map<std::string, std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

// Every data-CF entry of `store`, tombstones included.
std::vector<RangeEntry> ScanAll(Storage& store) {
  std::vector<RangeEntry> all;
  ScanOptions so;
  so.include_tombstones = true;
  for (;;) {
    auto batch = store.Scan(TokenRange{0, UINT64_MAX}, so);
    INFO(batch.status().ToString());
    REQUIRE(batch.ok());
    for (auto& e : batch->entries) all.push_back(std::move(e));
    if (batch->done) break;
    REQUIRE(batch->cursor != so.cursor);  // progress, or the loop would never end
    so.cursor = batch->cursor;
  }
  return all;
}

// Checks that `store` holds exactly the fixture keys `map` places on `node_id`: the live ones
// with their values, the deleted ones as tombstones, nothing else.
void CheckNodeKeys(Storage& store, const ClusterMap& map, uint32_t node_id) {
  size_t expected_entries = 0;
  for (int i = 0; i < kKeyCount; ++i) {
    const std::string key = Key(i);
    INFO("node " << node_id << ", " << key);
    const uint64_t token = map.TokenOf(key);
    const auto replicas = map.Replicas(token);
    const bool held = std::find(replicas.begin(), replicas.end(), node_id) != replicas.end();
    auto env = store.GetEnvelope(token, key);
    if (!held) {
      CHECK(env.status().IsNotFound());  // the add-node's cleanup dropped what this node lost
      continue;
    }
    ++expected_entries;
    REQUIRE(env.ok());
    CHECK(env->timestamp > 0);
    CHECK(env->node_id >= 1);
    CHECK(env->node_id <= 3);  // every write was coordinated by one of the three first nodes
    auto got = store.Get(token, key);
    if (kDeleted.count(i)) {
      CHECK(env->tombstone);
      CHECK(got.status().IsNotFound());
    } else {
      CHECK_FALSE(env->tombstone);
      REQUIRE(got.ok());
      CHECK(*got == ExpectedValue(i));
    }
  }
  const auto all = ScanAll(store);
  CHECK(all.size() == expected_entries);
  for (const RangeEntry& e : all) {
    INFO(e.key);
    CHECK(e.token == map.TokenOf(e.key));  // the token prefix is the current placement hash
  }
  auto hints = store.ScanAux(AuxColumn::kHints, "", "", 16);
  REQUIRE(hints.ok());
  CHECK(hints->empty());  // every write reached every replica
}

// The starting options of fixture node `id` in `root` on port 0.
NodeOptions FixtureNodeOptions(const std::string& root, uint32_t id, uint64_t cluster_id) {
  NodeOptions o;
  o.id = id;
  o.cluster_id = cluster_id;
  o.listen = "127.0.0.1:0";
  o.data_dir = NodeDir(root, id);
  o.io_threads = 1;
  o.block_cache_bytes = size_t{1} << 20;
  o.tombstone_grace_ms = kHugeGraceMs;
  return o;
}

// Sets meta key `key` of the RocksDB database in `db` with RocksDB itself (Storage refuses its
// reserved keys).
void RawMetaPut(const std::string& db, const std::string& key, const std::string& value) {
  std::vector<std::string> names;
  REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), db, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  size_t meta = names.size();
  for (size_t i = 0; i < names.size(); ++i) {
    cfs.push_back({names[i], rocksdb::ColumnFamilyOptions()});
    if (names[i] == "meta") meta = i;
  }
  REQUIRE(meta < names.size());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  auto s = rocksdb::DB::Open(rocksdb::DBOptions(), db, cfs, &handles, &raw);
  INFO(s.ToString());
  REQUIRE(s.ok());
  rocksdb::WriteOptions wo;
  wo.sync = true;
  CHECK(raw->Put(wo, handles[meta], key, value).ok());
  for (auto* h : handles) CHECK(raw->DestroyColumnFamilyHandle(h).ok());
  CHECK(raw->Close().ok());
  delete raw;
}

std::string RawMetaGet(const std::string& db, const std::string& key) {
  std::vector<std::string> names;
  REQUIRE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), db, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  size_t meta = names.size();
  for (size_t i = 0; i < names.size(); ++i) {
    cfs.push_back({names[i], rocksdb::ColumnFamilyOptions()});
    if (names[i] == "meta") meta = i;
  }
  REQUIRE(meta < names.size());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  REQUIRE(rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), db, cfs, &handles, &raw).ok());
  std::string value;
  auto s = raw->Get(rocksdb::ReadOptions(), handles[meta], key, &value);
  for (auto* h : handles) CHECK(raw->DestroyColumnFamilyHandle(h).ok());
  delete raw;
  INFO(s.ToString());
  REQUIRE(s.ok());
  return value;
}

std::unique_ptr<Client> ConnectClient(const Node& node, uint64_t cluster_id) {
  ClientOptions co;
  co.seeds = {node.address()};
  co.cluster_id = cluster_id;
  co.timeout_ms = 10000;
  auto client = Client::Connect(co);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return std::move(client).value();
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

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
    MapStore maps(store.get());
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
    CHECK(map.stage() == ChangeStage::kNone);
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
    auto rec = rebalance::ChangeRecord::Decode(map.change_detail());
    INFO(rec.status().ToString());
    REQUIRE(rec.ok());
    CHECK(rec->change_id == kRingChangeId);
    CHECK(rec->kind == "add");
    CHECK(rec->node_id == 4);
    CHECK(rec->state == rebalance::ChangeState::kDone);
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
    auto again = rebalance::ChangeRecord::Decode(rec->Encode());
    REQUIRE(again.ok());
    CHECK(again->change_id == rec->change_id);
    CHECK(again->moved_copies == rec->moved_copies);

    // Re-encoding the map with this build gives a map equal to the stored one.
    auto reencoded = ClusterMap::Decode(map.Encode());
    REQUIRE(reencoded.ok());
    CHECK(reencoded->epoch() == map.epoch());
    CHECK(reencoded->nodes() == map.nodes());
    CHECK(reencoded->change_detail() == map.change_detail());

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
    for (const RangeEntry& e : ScanAll(*store)) {
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
  MapStore maps(store.get());
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
  CHECK(map.change_detail().empty());  // no membership change was ever made
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

TEST_CASE("upgrade v0.1.0: a data directory with an unknown storage format version is refused",
          "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  const std::string db = DbDir(root, 1);
  // The old release stamped version 1, as decimal ASCII in the meta CF.
  CHECK(RawMetaGet(db, "storage/format_version") == "1");
  const std::string future = std::to_string(kStorageFormatVersion + 1);
  RawMetaPut(db, "storage/format_version", future);

  StorageOptions so;
  so.create_if_missing = false;
  so.node_id = 1;
  auto opened = Storage::Open(db, so);
  REQUIRE_FALSE(opened.ok());
  const Status& s = opened.status();
  INFO(s.ToString());
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(Contains(s.message(), db));
  CHECK(Contains(s.message(), "has storage format version " + future));
  CHECK(Contains(s.message(), "refusing to open it"));

  // Node::Start refuses it too, as a member and as a node without a cluster id, and names the
  // node's data directory.
  for (uint64_t cluster_id : {kRingClusterId, uint64_t{0}}) {
    INFO("cluster_id " << cluster_id);
    auto node = Node::Start(FixtureNodeOptions(root, 1, cluster_id));
    REQUIRE_FALSE(node.ok());
    INFO(node.status().ToString());
    CHECK(node.status().code() == Status::Code::kFailedPrecondition);
    CHECK(Contains(node.status().message(), NodeDir(root, 1)));
    CHECK(Contains(node.status().message(), "has storage format version " + future));
  }
  // The refusals left the marker alone (nothing re-stamped the directory).
  CHECK(RawMetaGet(db, "storage/format_version") == future);

  // Control: an untouched node of the same fixture opens.
  auto other = OpenStore(DbDir(root, 2), 2);
  CHECK(other->Close().ok());
}

TEST_CASE("upgrade v0.1.0: a stored cluster map with an unknown format version is refused",
          "[upgrade]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "ring");
  const std::string future = std::to_string(ClusterMap::kFormatVersion + 1);
  {
    auto store = OpenStore(DbDir(root, 1), 1);
    auto bytes = store->GetAux(AuxColumn::kMeta, MapStore::kMetaKey);
    REQUIRE(bytes.ok());
    std::string map = *bytes;
    // A single-segment Cap'n Proto message as the old release wrote it: segment table (8 bytes),
    // the root struct pointer with offset 0, then the root's data section, whose first 4 bytes
    // are formatVersion (field @0, UInt32, little-endian).
    REQUIRE(map.size() >= 24);
    uint32_t segments_minus_one = 0;
    uint32_t root_pointer_low = 0;
    uint32_t version = 0;
    std::memcpy(&segments_minus_one, map.data(), 4);
    std::memcpy(&root_pointer_low, map.data() + 8, 4);
    std::memcpy(&version, map.data() + 16, 4);
    REQUIRE(segments_minus_one == 0);
    REQUIRE(root_pointer_low == 0);  // struct pointer, offset 0: the data section follows
    REQUIRE(version == 1);
    const uint32_t bumped = ClusterMap::kFormatVersion + 1;
    std::memcpy(map.data() + 16, &bumped, 4);
    REQUIRE(store->PutAux(AuxColumn::kMeta, MapStore::kMetaKey, map).ok());

    MapStore maps(store.get());
    Status loaded = maps.Load();
    INFO(loaded.ToString());
    CHECK(loaded.code() == Status::Code::kFailedPrecondition);
    CHECK(Contains(loaded.message(), "cluster map format version " + future + " is unknown"));
    CHECK(maps.Current() == nullptr);
    REQUIRE(store->Close().ok());
  }
  // A node refuses to start on it rather than bootstrapping a fresh map over it, whether it
  // knows its cluster id or not.
  for (uint64_t cluster_id : {kRingClusterId, uint64_t{0}}) {
    INFO("cluster_id " << cluster_id);
    auto node = Node::Start(FixtureNodeOptions(root, 1, cluster_id));
    REQUIRE_FALSE(node.ok());
    INFO(node.status().ToString());
    CHECK(node.status().code() == Status::Code::kFailedPrecondition);
    CHECK(Contains(node.status().message(), "loading the cluster map"));
    CHECK(Contains(node.status().message(), "cluster map format version " + future));
  }
  // The bumped map is still there (not replaced by a bootstrap map).
  auto store = OpenStore(DbDir(root, 1), 1);
  MapStore maps(store.get());
  CHECK(maps.Load().code() == Status::Code::kFailedPrecondition);
  CHECK(store->Close().ok());
}
