// Helpers of the upgrade tests (upgrade_test.cc, upgrade_refusal_test.cc): the fixtures of
// tests/fixtures/v0.1.0-66cb51d, what they hold, and raw access to their stores.
#pragma once

#include <rocksdb/db.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cluster/map_store.h"
#include "net/messages.h"
#include "net/rpc_client.h"
#include "shardkv/change.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/node.h"
#include "shardkv/options.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

namespace upgrade {

using namespace shardkv;
using shardkv::testing::TempDir;
namespace fs = std::filesystem;

inline const std::string kFixtureRoot = std::string(SHARDKV_FIXTURES_DIR) + "/v0.1.0-66cb51d";

// What the fixtures were generated with (tests/fixtures/README.md).
inline constexpr uint64_t kRingClusterId = 6138709456063951309ull;
inline constexpr uint64_t kRingEpoch = 5;
inline constexpr uint64_t kRingChangeId = 16818502549676216535ull;
inline constexpr uint64_t kJumpClusterId = 6712528135234328663ull;
inline constexpr int kKeyCount = 50;
inline const std::set<int> kDeleted = {5, 15, 25, 35, 45};

// Keep every tombstone whatever the wall clock says when the test runs: the fixtures' deletes
// are older than any grace by then.
inline constexpr uint64_t kHugeGraceMs = kMaxTombstoneGraceSeconds * 1000;

inline std::string Key(int i) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "key-%03d", i);
  return buf;
}

inline std::string ExpectedValue(int i) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "value-%03d", i);
  return i == 0 ? std::string(buf) + "-v2" : std::string(buf);
}

// Copies fixture `name` (ring or jump1) into `dir`; returns the copy's root.
inline std::string CopyFixture(const TempDir& dir, const std::string& name) {
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

inline std::string NodeDir(const std::string& root, uint32_t id) {
  return root + "/node-" + std::to_string(id);
}
inline std::string DbDir(const std::string& root, uint32_t id) { return NodeDir(root, id) + "/db"; }

inline std::unique_ptr<storage::Storage> OpenStore(const std::string& db, uint32_t node_id) {
  storage::StorageOptions so;
  so.create_if_missing = false;
  so.node_id = node_id;
  so.tombstone_grace_ms = kHugeGraceMs;
  so.block_cache_bytes = size_t{1} << 20;
  auto s = storage::Storage::Open(db, so);
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  return std::move(s).value();
}

// `key=value` lines of a cluster.conf written by the old CLI.
inline std::map<std::string, std::string> ReadConf(const std::string& path) {
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
inline std::vector<storage::RangeEntry> ScanAll(storage::Storage& store) {
  std::vector<storage::RangeEntry> all;
  storage::ScanOptions so;
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
inline void CheckNodeKeys(storage::Storage& store, const ClusterMap& map, uint32_t node_id) {
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
  for (const storage::RangeEntry& e : all) {
    INFO(e.key);
    CHECK(e.token == map.TokenOf(e.key));  // the token prefix is the current placement hash
  }
  auto hints = store.ScanAux(storage::AuxColumn::kHints, "", "", 16);
  REQUIRE(hints.ok());
  CHECK(hints->empty());  // every write reached every replica
}

// The starting options of fixture node `id` in `root` on port 0.
inline NodeOptions FixtureNodeOptions(const std::string& root, uint32_t id, uint64_t cluster_id) {
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

// Opens the RocksDB database in `db` with RocksDB itself (Storage refuses its reserved keys),
// runs `use` on it and its meta column family, and closes it.
inline void WithRawMeta(
    const std::string& db, bool read_only,
    const std::function<void(rocksdb::DB*, rocksdb::ColumnFamilyHandle*)>& use) {
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
  auto s = read_only ? rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), db, cfs, &handles, &raw)
                     : rocksdb::DB::Open(rocksdb::DBOptions(), db, cfs, &handles, &raw);
  INFO(s.ToString());
  REQUIRE(s.ok());
  use(raw, handles[meta]);
  for (auto* h : handles) CHECK(raw->DestroyColumnFamilyHandle(h).ok());
  if (!read_only) CHECK(raw->Close().ok());
  delete raw;
}

inline void RawMetaPut(const std::string& db, const std::string& key, const std::string& value) {
  WithRawMeta(db, false, [&](rocksdb::DB* raw, rocksdb::ColumnFamilyHandle* meta) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    CHECK(raw->Put(wo, meta, key, value).ok());
  });
}

inline std::string RawMetaGet(const std::string& db, const std::string& key) {
  std::string value;
  rocksdb::Status s;
  WithRawMeta(db, true, [&](rocksdb::DB* raw, rocksdb::ColumnFamilyHandle* meta) {
    s = raw->Get(rocksdb::ReadOptions(), meta, key, &value);
  });
  INFO(s.ToString());
  REQUIRE(s.ok());
  return value;
}

inline std::unique_ptr<Client> ConnectClient(const Node& node, uint64_t cluster_id) {
  ClientOptions co;
  co.seeds = {node.address()};
  co.cluster_id = cluster_id;
  co.timeout_ms = 10000;
  auto client = Client::Connect(co);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return std::move(client).value();
}

inline bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace upgrade
