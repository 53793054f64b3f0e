// Scans (design.md "Scans"): the replica-side range read, and whole-cluster scans through
// Client::Scan on in-process 3-node clusters in both placement modes, at every consistency
// level, across a scale-out.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cluster/scan_coordinator.h"
#include "rebalance_test_util.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

namespace {

ClusterParams Params(PlacementMode mode) { return shardkv::testing::ThreeReplicas(mode); }

std::unique_ptr<Client> Connect(const InProcessCluster& c) {
  return shardkv::testing::MustConnect(c, 10000);
}

// Scans from `cursor` to the end; every key with its number of appearances. `calls` gets the
// number of batches. Fails the test past max_calls (a scan that never ends).
std::map<std::string, int> ScanAll(Client& client, const ScanOptions& options, Consistency c,
                                   int* calls = nullptr, uint64_t cursor = 0,
                                   int max_calls = 100000) {
  std::map<std::string, int> seen;
  int n = 0;
  do {
    auto page = client.Scan(cursor, options, c);
    INFO(page.status().ToString());
    REQUIRE(page.ok());
    for (const auto& k : page->keys) ++seen[k];
    cursor = page->cursor;
    REQUIRE(++n <= max_calls);
  } while (cursor != 0);
  if (calls != nullptr) *calls = n;
  return seen;
}

std::string Key(int i) { return "key:" + std::to_string(i); }

}  // namespace

TEST_CASE("scan: a replica batch ends at a token boundary and marks tombstones", "[scan]") {
  testing::TempDir dir;
  storage::StorageOptions so;
  so.node_id = 1;
  auto opened = storage::Storage::Open(dir.Sub("db"), so);
  REQUIRE(opened.ok());
  auto& db = **opened;
  // Token 7 holds five keys (a collision), tokens 1..5 one each, token 9 a tombstone.
  for (uint64_t t = 1; t <= 5; ++t) REQUIRE(db.Put(t, "t" + std::to_string(t), "v").ok());
  for (int i = 0; i < 5; ++i) REQUIRE(db.Put(7, "c" + std::to_string(i), "v").ok());
  REQUIRE(db.Put(9, "gone", "v").ok());
  REQUIRE(db.Delete(9, "gone").ok());

  net::ReplicaScanRequest r{0, 100, 6, 0, ""};
  auto first = cluster::ReadReplicaRange(&db, r);
  REQUIRE(first.ok());
  // Six entries read stop inside token 7; the batch finishes it: 5 + 5 keys.
  CHECK_FALSE(first->done);
  CHECK(first->entries.size() == 10);
  CHECK(first->next == 8);
  r.first = first->next;
  auto second = cluster::ReadReplicaRange(&db, r);
  REQUIRE(second.ok());
  CHECK(second->done);
  REQUIRE(second->entries.size() == 1);
  CHECK(second->entries[0].key == "gone");
  CHECK(second->entries[0].hidden);

  r = net::ReplicaScanRequest{0, 100, 1000, 0, "c[0-2]"};
  auto matched = cluster::ReadReplicaRange(&db, r);
  REQUIRE(matched.ok());
  CHECK(matched->done);
  CHECK(matched->entries.size() == 3);
  CHECK(matched->examined == 11);  // every entry was read, matching or not

  // An empty range and a bad one.
  r = net::ReplicaScanRequest{200, 300, 10, 0, ""};
  auto empty = cluster::ReadReplicaRange(&db, r);
  REQUIRE(empty.ok());
  CHECK(empty->done);
  CHECK(empty->entries.empty());
  r = net::ReplicaScanRequest{5, 4, 10, 0, ""};
  CHECK(cluster::ReadReplicaRange(&db, r).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("scan: pieces cover the token space with one replica set each", "[scan]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    InProcessCluster cluster(3, Params(mode));
    REQUIRE(cluster.Start().ok());
    const ClusterMap& map = cluster.map();
    uint64_t token = 0;
    size_t pieces = 0;
    TokenRange piece;
    while (cluster::ScanPiece(map, token, &piece)) {
      REQUIRE(piece.first == token);
      // From anywhere inside a piece, the rest of the same piece.
      TokenRange rest;
      REQUIRE(cluster::ScanPiece(map, piece.first + (piece.last - piece.first) / 2, &rest));
      CHECK(rest.last == piece.last);
      REQUIRE(piece.Valid());
      CHECK(map.ReadReplicas(piece.first) == map.ReadReplicas(piece.last));
      REQUIRE(++pieces < 100000);
      if (piece.last == UINT64_MAX) break;
      token = piece.last + 1;
    }
    if (mode == PlacementMode::kJump) {
      CHECK(pieces == 64);
      CHECK(token == uint64_t{64} << 32);  // just past the last shard's tokens
    } else {
      CHECK(piece.last == UINT64_MAX);
      CHECK(pieces >= 3);
    }
  }
}

TEST_CASE("scan: every live key exactly once on a quiet cluster, in both modes", "[scan]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    InProcessCluster cluster(3, Params(mode));
    REQUIRE(cluster.Start().ok());
    auto client = Connect(cluster);
    constexpr int kKeys = 400;
    std::vector<std::pair<std::string, std::string>> items;
    for (int i = 0; i < kKeys; ++i) items.emplace_back(Key(i), "v");
    for (const auto& s : client->MultiPut(items)) REQUIRE(s.ok());
    for (int i = 0; i < kKeys; i += 10) REQUIRE(client->Delete(Key(i)).ok());
    std::set<std::string> live;
    for (int i = 0; i < kKeys; ++i) {
      if (i % 10 != 0) live.insert(Key(i));
    }

    for (auto c : {Consistency::kOne, Consistency::kQuorum, Consistency::kAll}) {
      for (uint32_t count : {1u, 10u, 5000u}) {
        INFO("mode " << static_cast<int>(mode) << " consistency " << static_cast<int>(c)
                     << " count " << count);
        int calls = 0;
        const auto seen = ScanAll(*client, ScanOptions{"", count}, c, &calls);
        std::set<std::string> keys;
        for (const auto& [k, n] : seen) {
          CHECK(n == 1);
          keys.insert(k);
        }
        CHECK(keys == live);
        // COUNT bounds the work of a batch: with COUNT 1 about one key a call.
        if (count == 1) CHECK(calls >= static_cast<int>(live.size()) / 4);
        if (count == 5000) CHECK(calls <= 20);
      }
    }

    // MATCH filters; a pattern that matches nothing still ends with cursor 0.
    for (int i = 0; i < 20; ++i) REQUIRE(client->Put("user:" + std::to_string(i), "u").ok());
    const auto users = ScanAll(*client, ScanOptions{"user:*", 50}, Consistency::kDefault);
    CHECK(users.size() == 20);
    CHECK(ScanAll(*client, ScanOptions{"nothing*", 50}, Consistency::kDefault).empty());
  }
}

TEST_CASE("scan: an empty cluster ends at once-ish and a reply stays bounded", "[scan]") {
  InProcessCluster cluster(3, Params(PlacementMode::kRing));
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  int calls = 0;
  CHECK(ScanAll(*client, ScanOptions{}, Consistency::kDefault, &calls).empty());
  CHECK(calls <= 20);  // at most kMaxPiecesPerBatch empty pieces a call

  // 1200 keys of 6000 bytes: 7 MB, more than one batch may carry.
  constexpr int kKeys = 1200;
  std::vector<std::pair<std::string, std::string>> items;
  for (int i = 0; i < kKeys; ++i) items.emplace_back(std::string(6000, 'x') + Key(i), "v");
  for (size_t at = 0; at < items.size(); at += 100) {
    std::vector<std::pair<std::string, std::string>> part(
        items.begin() + static_cast<long>(at),
        items.begin() + static_cast<long>(std::min(items.size(), at + 100)));
    for (const auto& s : client->MultiPut(part)) REQUIRE(s.ok());
  }
  uint64_t cursor = 0;
  size_t total = 0;
  int batches = 0;
  do {
    auto page = client->Scan(cursor, ScanOptions{"", 100000});
    REQUIRE(page.ok());
    size_t bytes = 0;
    for (const auto& k : page->keys) bytes += k.size();
    CHECK(bytes <= cluster::kMaxScanBatchBytes + 64 * 6100);  // the bound plus one piece's last
    total += page->keys.size();
    cursor = page->cursor;
    REQUIRE(++batches < 1000);
  } while (cursor != 0);
  CHECK(total == kKeys);
  CHECK(batches >= 2);
}

TEST_CASE("scan: a cursor taken before a scale-out finds every key after it", "[scan]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    InProcessCluster cluster(3, Params(mode));
    REQUIRE(cluster.Start().ok());
    auto client = Connect(cluster);
    constexpr int kKeys = 600;
    std::vector<std::pair<std::string, std::string>> items;
    for (int i = 0; i < kKeys; ++i) items.emplace_back(Key(i), "v");
    for (const auto& s : client->MultiPut(items)) REQUIRE(s.ok());

    // About half of the keys, then pause the scan.
    std::map<std::string, int> seen;
    uint64_t cursor = 0;
    for (int calls = 0; seen.size() < kKeys / 2; ++calls) {
      REQUIRE(calls < 1000);
      auto page = client->Scan(cursor, ScanOptions{"", 20});
      REQUIRE(page.ok());
      for (const auto& k : page->keys) ++seen[k];
      cursor = page->cursor;
      REQUIRE(cursor != 0);
    }

    auto added = cluster.AddStandaloneNode();
    REQUIRE(added.ok());
    auto admin = testing::AdminFor(cluster);
    const AdminReply begun =
        admin->Begin(rebalance_test::AddOf(cluster, *added), rebalance_test::RateMb(0));
    INFO(begun.status.ToString());
    REQUIRE(begun.status.ok());
    auto done = testing::WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
    INFO(done.status().ToString());
    REQUIRE(done.ok());

    // Resume with the old cursor, through a client that has the new map (a fresh one) and
    // through the old client (its map is stale until a node hands it the new one).
    auto fresh = Connect(cluster);
    for (Client* c : {client.get(), fresh.get()}) {
      auto all = seen;
      for (const auto& [k, n] :
           ScanAll(*c, ScanOptions{"", 20}, Consistency::kDefault, nullptr, cursor)) {
        all[k] += n;
      }
      int missing = 0;
      for (int i = 0; i < kKeys; ++i) missing += all.count(Key(i)) == 0 ? 1 : 0;
      CHECK(missing == 0);
      CHECK(all.size() == kKeys);
    }
  }
}

TEST_CASE("scan: an expired key is hidden like a deleted one, a persisted one stays",
          "[scan][ttl]") {
  using namespace std::chrono_literals;
  InProcessCluster cluster(3, Params(PlacementMode::kRing));
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  std::set<std::string> persistent;
  for (int i = 0; i < 60; ++i) {
    if (i % 3 == 0) {
      REQUIRE(client->Put(Key(i), "short", PutOptions{400ms, false}).ok());
    } else {
      REQUIRE(client->Put(Key(i), "v").ok());
      persistent.insert(Key(i));
    }
  }
  // One TTL key is persisted again before it expires: it must stay.
  REQUIRE(client->Put("kept", "v", PutOptions{std::chrono::milliseconds(60000), false}).ok());
  REQUIRE(client->Persist("kept").ok());
  persistent.insert("kept");
  // Expiry is judged against the wall clock: poll (bounded) until the short keys read as gone.
  REQUIRE(shardkv::testing::PollUntil(
      [&] {
        for (int i = 0; i < 60; i += 3) {
          if (client->Get(Key(i), Consistency::kAll).ok()) return false;
        }
        return true;
      },
      10s));
  for (auto c : {Consistency::kOne, Consistency::kQuorum, Consistency::kAll}) {
    INFO("consistency " << static_cast<int>(c));
    std::set<std::string> keys;
    for (const auto& [k, n] : ScanAll(*client, ScanOptions{"", 7}, c)) keys.insert(k);
    CHECK(keys == persistent);
  }
}
