// Storage: point operations, LWW, reopen, HLC across restarts, format version, meta/hints.
#include "storage/storage.h"

#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "storage/storage_test_util.h"

namespace shardkv::storage {
namespace {

using testing::FakeClock;
using testing::OpenOrDie;
using testing::TempDir;
using testing::TestOptions;

using testing::kStartMs;

Envelope Value(uint64_t physical_ms, uint64_t logical, uint32_t node, std::string v) {
  return Envelope{common::HlcClock::Make(physical_ms, logical), node, false, std::move(v)};
}
Envelope Tombstone(uint64_t physical_ms, uint64_t logical, uint32_t node) {
  return Envelope{common::HlcClock::Make(physical_ms, logical), node, true, ""};
}

TEST_CASE("Put, Get and Delete by token and key", "[storage]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());

  auto put = db->Put(42, "alpha", "one");
  REQUIRE_OK(put);
  CHECK(put->outcome == WriteOutcome::kApplied);
  CHECK(put->written.node_id == 1);
  CHECK(put->stored == put->written);

  auto got = db->Get(42, "alpha");
  REQUIRE_OK(got);
  CHECK(*got == "one");
  CHECK(db->Get(43, "alpha").status().IsNotFound());  // same key, other token: other entry
  CHECK(db->Get(42, "beta").status().IsNotFound());

  auto del = db->Delete(42, "alpha");
  REQUIRE_OK(del);
  CHECK(del->written > put->written);
  CHECK(db->Get(42, "alpha").status().IsNotFound());
  auto env = db->GetEnvelope(42, "alpha");
  REQUIRE_OK(env);
  CHECK(env->tombstone);
  CHECK(env->version() == del->written);

  // A later Put resurrects it: local writes are ordered by the HLC.
  REQUIRE_OK(db->Put(42, "alpha", "two"));
  CHECK(*db->Get(42, "alpha") == "two");

  // Empty keys and values are ordinary.
  REQUIRE_OK(db->Put(0, "", ""));
  CHECK(db->Get(0, "")->empty());
  REQUIRE_OK(db->Close());
}

TEST_CASE("LWW: newer wins, older never overwrites, node id breaks ties", "[storage][lww]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);
  const uint64_t t = 7;
  const uint64_t ms = kStartMs - 1000;

  REQUIRE(db->Write(t, "k", Value(ms, 5, 2, "v5"))->outcome == WriteOutcome::kApplied);

  SECTION("an older timestamp is superseded") {
    auto r = db->Write(t, "k", Value(ms, 4, 9, "v4"));
    REQUIRE_OK(r);
    CHECK(r->outcome == WriteOutcome::kSuperseded);
    CHECK(r->stored == (Version{common::HlcClock::Make(ms, 5), 2}));
    CHECK(*db->Get(t, "k") == "v5");
  }
  SECTION("a newer timestamp wins") {
    CHECK(db->Write(t, "k", Value(ms, 6, 0, "v6"))->outcome == WriteOutcome::kApplied);
    CHECK(*db->Get(t, "k") == "v6");
  }
  SECTION("equal timestamps: the higher node id wins, in either arrival order") {
    CHECK(db->Write(t, "k", Value(ms, 5, 1, "node1"))->outcome == WriteOutcome::kSuperseded);
    CHECK(*db->Get(t, "k") == "v5");
    CHECK(db->Write(t, "k", Value(ms, 5, 3, "node3"))->outcome == WriteOutcome::kApplied);
    CHECK(*db->Get(t, "k") == "node3");
    CHECK(db->Write(t, "k", Value(ms, 5, 2, "v5"))->outcome == WriteOutcome::kSuperseded);
    CHECK(*db->Get(t, "k") == "node3");
  }
  SECTION("an identical (timestamp, node) is an idempotent duplicate") {
    auto r = db->Write(t, "k", Value(ms, 5, 2, "v5"));
    CHECK(r->outcome == WriteOutcome::kDuplicate);
    CHECK(*db->Get(t, "k") == "v5");
  }
  SECTION("tombstones obey LWW both ways") {
    CHECK(db->Write(t, "k", Tombstone(ms, 4, 9))->outcome == WriteOutcome::kSuperseded);
    CHECK(*db->Get(t, "k") == "v5");
    CHECK(db->Write(t, "k", Tombstone(ms, 6, 0))->outcome == WriteOutcome::kApplied);
    CHECK(db->Get(t, "k").status().IsNotFound());
    // A replayed older value does not resurrect the deleted key.
    CHECK(db->Write(t, "k", Value(ms, 5, 3, "old"))->outcome == WriteOutcome::kSuperseded);
    CHECK(db->Get(t, "k").status().IsNotFound());
  }
  SECTION("a timestamp beyond max_clock_offset is refused and changes nothing") {
    auto r = db->Write(t, "k", Value(kStartMs + 501, 0, 2, "future"));
    CHECK(r.status().IsInvalidArgument());
    CHECK(r.status().message().find("ahead of the local clock") != std::string::npos);
    CHECK(*db->Get(t, "k") == "v5");
  }
}

TEST_CASE("a local write after a remote one that is slightly ahead still wins", "[storage][lww]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);
  // A coordinator 400 ms ahead of us wrote this; our clock moves past it.
  REQUIRE_OK(db->Write(1, "k", Value(kStartMs + 400, 0, 9, "remote")));
  auto local = db->Put(1, "k", "local");
  REQUIRE_OK(local);
  CHECK(local->outcome == WriteOutcome::kApplied);
  CHECK(local->written.timestamp > common::HlcClock::Make(kStartMs + 400, 0));
  CHECK(*db->Get(1, "k") == "local");
}

TEST_CASE("concurrent LWW writers converge on the newest version", "[storage][lww]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);
  constexpr int kKeys = 16;
  constexpr int kWritesPerThread = 2000;
  constexpr int kThreads = 4;
  std::vector<std::map<int, Version>> best(kThreads);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      for (int i = 0; i < kWritesPerThread; ++i) {
        const int k = static_cast<int>(rng() % kKeys);
        const Version v{common::HlcClock::Make(kStartMs - 5000 + rng() % 4000, rng() % 4),
                        static_cast<uint32_t>(rng() % 3)};
        const Envelope e{v.timestamp, v.node_id, (rng() % 5) == 0, ""};
        if (!db->Write(static_cast<uint64_t>(k), "key", e).ok()) {
          failures.fetch_add(1);
          return;
        }
        auto& b = best[t][k];
        b = std::max(b, v);
      }
    });
  }
  for (auto& th : threads) th.join();
  REQUIRE(failures.load() == 0);
  for (int k = 0; k < kKeys; ++k) {
    Version expect;
    for (const auto& m : best) {
      if (auto it = m.find(k); it != m.end()) expect = std::max(expect, it->second);
    }
    auto env = db->GetEnvelope(static_cast<uint64_t>(k), "key");
    REQUIRE_OK(env);
    CHECK(env->version() == expect);
  }
}

TEST_CASE("MultiGet reads many keys at once", "[storage]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  REQUIRE_OK(db->Put(1, "a", "A"));
  REQUIRE_OK(db->Put(2, "b", "B"));
  REQUIRE_OK(db->Put(3, "c", "C"));
  REQUIRE_OK(db->Delete(3, "c"));
  const std::vector<KeyRef> keys = {{2, "b"}, {9, "missing"}, {3, "c"}, {1, "a"}};

  auto values = db->MultiGet(keys);
  REQUIRE(values.size() == 4);
  CHECK(*values[0] == "B");
  CHECK(values[1].status().IsNotFound());
  CHECK(values[2].status().IsNotFound());
  CHECK(*values[3] == "A");

  auto envelopes = db->MultiGetEnvelopes(keys);
  REQUIRE(envelopes.size() == 4);
  CHECK(envelopes[1].status().IsNotFound());
  REQUIRE_OK(envelopes[2]);
  CHECK(envelopes[2]->tombstone);
  CHECK(envelopes[0]->value == "B");
  CHECK(db->MultiGet({}).empty());
}

TEST_CASE("oversized keys and values are refused", "[storage]") {
  TempDir dir;
  StorageOptions options = TestOptions();
  options.max_key_bytes = 16;
  options.max_value_bytes = 32;
  auto db = OpenOrDie(dir.path(), options);
  CHECK(db->Put(1, std::string(17, 'k'), "v").status().IsInvalidArgument());
  CHECK(db->Put(1, "k", std::string(33, 'v')).status().IsInvalidArgument());
  CHECK(db->Write(1, "k", Envelope{1, 1, true, "x"}).status().IsInvalidArgument());
  REQUIRE_OK(db->Put(1, std::string(16, 'k'), std::string(32, 'v')));
}

TEST_CASE("data survives close and reopen", "[storage][durability]") {
  TempDir dir;
  const bool sync = GENERATE(false, true);
  StorageOptions options = TestOptions();
  options.sync = sync;
  std::mt19937_64 rng(7);
  std::map<std::pair<uint64_t, std::string>, std::string> expect;
  {
    auto db = OpenOrDie(dir.path(), options);
    for (int i = 0; i < 500; ++i) {
      const uint64_t token = rng();
      const std::string key = "key" + std::to_string(i);
      const std::string value = "value" + std::to_string(rng());
      REQUIRE_OK(db->Put(token, key, value));
      expect[{token, key}] = value;
    }
    REQUIRE_OK(db->Close());
    REQUIRE_OK(db->Close());  // idempotent
    CHECK(db->Put(1, "k", "v").status().code() == Status::Code::kFailedPrecondition);
  }
  auto db = OpenOrDie(dir.path(), options);
  for (const auto& [tk, value] : expect) {
    auto got = db->Get(tk.first, tk.second);
    REQUIRE_OK(got);
    CHECK(*got == value);
  }
}

TEST_CASE("the HLC never goes backwards across a restart", "[storage][hlc]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  uint64_t last = 0;
  {
    auto db = OpenOrDie(dir.path(), options);
    for (int i = 0; i < 1000; ++i) {
      auto r = db->Put(5, "k", std::to_string(i));
      REQUIRE_OK(r);
      last = r->written.timestamp;
    }
    // One ceiling write covers a whole window of wall time, not one per timestamp.
    CHECK(db->clock().CeilingWrites() == 1);
    auto ceiling = db->GetAux(AuxColumn::kMeta, "storage/hlc_ceiling");
    REQUIRE_OK(ceiling);
    CHECK(std::stoull(*ceiling) > last);
  }
  clock.Set(kStartMs - 3'600'000);  // the wall clock was set back an hour
  auto db = OpenOrDie(dir.path(), options);
  auto ts = db->clock().Now();
  REQUIRE_OK(ts);
  CHECK(*ts > last);
  // And the write it timestamps beats the pre-restart one.
  auto r = db->Put(5, "k", "after restart");
  REQUIRE_OK(r);
  CHECK(r->outcome == WriteOutcome::kApplied);
  CHECK(*db->Get(5, "k") == "after restart");
}

TEST_CASE("format version: stamped on create, unknown versions refused", "[storage][format]") {
  TempDir dir;
  {
    auto db = OpenOrDie(dir.path(), TestOptions());
    auto v = db->GetAux(AuxColumn::kMeta, "storage/format_version");
    REQUIRE_OK(v);
    CHECK(*v == std::to_string(kStorageFormatVersion));
    CHECK(db->PutAux(AuxColumn::kMeta, "storage/format_version", "2").IsInvalidArgument());
    CHECK(db->DeleteAux(AuxColumn::kMeta, "storage/format_version").IsInvalidArgument());
  }
  {
    // Rewrite the version the way a future build would, through RocksDB directly.
    std::vector<rocksdb::ColumnFamilyDescriptor> cfs = {
        {rocksdb::kDefaultColumnFamilyName, {}}, {"data", {}}, {"meta", {}}, {"hints", {}}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(rocksdb::DBOptions(), dir.path(), cfs, &handles, &raw).ok());
    REQUIRE(raw->Put(rocksdb::WriteOptions(), handles[2], "storage/format_version", "99").ok());
    for (auto* h : handles) REQUIRE(raw->DestroyColumnFamilyHandle(h).ok());
    delete raw;
  }
  auto refused = Storage::Open(dir.path(), TestOptions());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kFailedPrecondition);
  CHECK(refused.status().message().find("format version 99") != std::string::npos);
  CHECK(refused.status().message().find("reads only version 1") != std::string::npos);
}

TEST_CASE("directories that are not shardkv databases are refused", "[storage][format]") {
  TempDir dir;
  SECTION("missing database and create_if_missing = false") {
    StorageOptions options = TestOptions();
    options.create_if_missing = false;
    CHECK(Storage::Open(dir.Sub("nothing"), options).status().IsNotFound());
  }
  SECTION("a plain RocksDB database") {
    rocksdb::Options o;
    o.create_if_missing = true;
    rocksdb::DB* raw = nullptr;
    REQUIRE(rocksdb::DB::Open(o, dir.path(), &raw).ok());
    delete raw;
    auto s = Storage::Open(dir.path(), TestOptions());
    CHECK(s.status().code() == Status::Code::kFailedPrecondition);
    CHECK(s.status().message().find("column family") != std::string::npos);
  }
  SECTION("a nested path is created") {
    auto s = Storage::Open(dir.Sub("a/b/c"), TestOptions());
    REQUIRE_OK(s);
  }
}

TEST_CASE("meta and hints column families", "[storage][aux]") {
  TempDir dir;
  {
    auto db = OpenOrDie(dir.path(), TestOptions());
    REQUIRE_OK(db->PutAux(AuxColumn::kMeta, "cluster/map", "epoch=3"));
    for (uint64_t seq = 0; seq < 5; ++seq) {
      REQUIRE_OK(db->PutAux(AuxColumn::kHints, EncodeHintKey(2, 100 + seq, seq), "h2"));
      REQUIRE_OK(db->PutAux(AuxColumn::kHints, EncodeHintKey(3, 100 + seq, seq), "h3"));
    }
  }
  auto db = OpenOrDie(dir.path(), TestOptions());
  CHECK(*db->GetAux(AuxColumn::kMeta, "cluster/map") == "epoch=3");
  CHECK(db->GetAux(AuxColumn::kHints, "cluster/map").status().IsNotFound());

  auto first = db->ScanAux(AuxColumn::kHints, HintTargetPrefix(2), "", 3);
  REQUIRE_OK(first);
  REQUIRE(first->size() == 3);
  auto rest = db->ScanAux(AuxColumn::kHints, HintTargetPrefix(2), first->back().first, 100);
  REQUIRE_OK(rest);
  REQUIRE(rest->size() == 2);
  for (const auto& [k, v] : *rest) CHECK(v == "h2");
  uint32_t target = 0;
  uint64_t token = 0;
  uint64_t seq = 0;
  REQUIRE(DecodeHintKey(rest->back().first, &target, &token, &seq));
  CHECK(seq == 4);

  REQUIRE_OK(db->DeleteAux(AuxColumn::kHints, rest->back().first));
  CHECK(db->ScanAux(AuxColumn::kHints, HintTargetPrefix(2), "", 100)->size() == 4);
  CHECK(db->ScanAux(AuxColumn::kHints, HintTargetPrefix(3), "", 100)->size() == 5);
}

}  // namespace
}  // namespace shardkv::storage
