// Storage::WriteMany: a batch answers exactly as Write() once per entry in order would, in one
// WriteBatch.
#include <random>

#include "storage/storage.h"
#include "storage/storage_test_util.h"

namespace shardkv::storage {
namespace {

using testing::OpenOrDie;
using testing::TempDir;
using testing::TestOptions;

using testing::kStartMs;

Envelope Value(uint64_t ms, uint32_t node, std::string v) {
  return Envelope{common::HlcClock::Make(kStartMs + ms, 0), node, false, std::move(v)};
}
Envelope Tombstone(uint64_t ms, uint32_t node) {
  return Envelope{common::HlcClock::Make(kStartMs + ms, 0), node, true, ""};
}

}  // namespace

TEST_CASE("write many: each entry meets the record the earlier entries left", "[storage]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  const std::vector<RangeEntry> batch = {
      {7, "k", Value(10, 2, "a")},  // created
      {7, "k", Value(20, 2, "b")},  // newer: applied over "a"
      {7, "k", Value(5, 3, "c")},   // older than "b": superseded
      {7, "k", Value(20, 2, "b")},  // the same version again: duplicate
      {8, "other", Tombstone(1, 2)},
  };
  auto results = db->WriteMany(batch);
  REQUIRE(results.size() == batch.size());
  for (const auto& r : results) REQUIRE_OK(r);
  CHECK(results[0]->outcome == WriteOutcome::kApplied);
  CHECK(results[1]->outcome == WriteOutcome::kApplied);
  CHECK(results[2]->outcome == WriteOutcome::kSuperseded);
  CHECK(results[2]->stored == batch[1].envelope.version());
  CHECK(results[3]->outcome == WriteOutcome::kDuplicate);
  CHECK(results[4]->outcome == WriteOutcome::kApplied);
  CHECK(*db->Get(7, "k") == "b");
  auto other = db->GetEnvelope(8, "other");
  REQUIRE_OK(other);
  CHECK(other->tombstone);
}

TEST_CASE("write many: a newer stored version supersedes and stays", "[storage]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  REQUIRE_OK(db->Write(1, "k", Value(100, 2, "new")));
  auto results = db->WriteMany({{1, "k", Value(50, 3, "old")}, {2, "j", Value(50, 3, "fresh")}});
  REQUIRE_OK(results[0]);
  CHECK(results[0]->outcome == WriteOutcome::kSuperseded);
  CHECK(results[0]->stored.timestamp == common::HlcClock::Make(kStartMs + 100, 0));
  CHECK(*db->Get(1, "k") == "new");
  REQUIRE_OK(results[1]);
  CHECK(*db->Get(2, "j") == "fresh");
}

TEST_CASE("write many: an entry that fails its checks fails alone", "[storage]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  Envelope bad = Tombstone(10, 2);
  bad.value = "a tombstone with a value";
  auto results =
      db->WriteMany({{1, "a", Value(10, 2, "x")}, {2, "b", bad}, {3, "c", Value(10, 2, "z")}});
  REQUIRE_OK(results[0]);
  CHECK(results[1].status().code() == Status::Code::kInvalidArgument);
  REQUIRE_OK(results[2]);
  CHECK(*db->Get(1, "a") == "x");
  CHECK(db->GetEnvelope(2, "b").status().IsNotFound());
  CHECK(*db->Get(3, "c") == "z");
  CHECK(db->WriteMany({}).empty());
}

TEST_CASE("write many: answers and stores what one write per entry would", "[storage]") {
  // The oracle: the same entries written one by one into a second database.
  TempDir dir_a, dir_b;
  auto batched = OpenOrDie(dir_a.path(), TestOptions());
  auto single = OpenOrDie(dir_b.path(), TestOptions());
  std::mt19937_64 rng(20261206);
  const std::vector<std::string> keys = {"a", "b", "c", "d"};
  for (int round = 0; round < 50; ++round) {
    std::vector<RangeEntry> batch;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const std::string& key = keys[rng() % keys.size()];
      const uint64_t ms = rng() % 40;
      const auto node = static_cast<uint32_t>(1 + rng() % 3);
      Envelope e = rng() % 4 == 0 ? Tombstone(ms, node) : Value(ms, node, "v" + std::to_string(ms));
      batch.push_back({static_cast<uint64_t>(key[0]), key, e});
    }
    auto results = batched->WriteMany(batch);
    REQUIRE(results.size() == batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      auto expected = single->Write(batch[i].token, batch[i].key, batch[i].envelope);
      REQUIRE_OK(expected);
      REQUIRE_OK(results[i]);
      CHECK(results[i]->outcome == expected->outcome);
      CHECK(results[i]->stored == expected->stored);
      CHECK(results[i]->written == expected->written);
    }
  }
  for (const std::string& key : keys) {
    auto a = batched->GetEnvelope(key[0], key);
    auto b = single->GetEnvelope(key[0], key);
    REQUIRE(a.ok() == b.ok());
    if (a.ok()) CHECK(*a == *b);
  }
  CHECK(batched->LiveKeys().keys == single->LiveKeys().keys);
}

}  // namespace shardkv::storage
