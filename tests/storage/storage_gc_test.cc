// Storage: tombstone garbage collection by the compaction filter.
#include <chrono>
#include <thread>

#include "storage/storage.h"
#include "storage/storage_test_util.h"

namespace shardkv::storage {
namespace {

using testing::FakeClock;
using testing::OpenOrDie;
using testing::TempDir;
using testing::TestOptions;

using testing::kStartMs;
constexpr TokenRange kAll{0, UINT64_MAX};

size_t InternalEntries(Storage& db, uint64_t token) {
  auto n = db.DebugCountInternalEntries({token, token});
  REQUIRE_OK(n);
  return *n;
}

// Overwrites a key several times with the versions spread over several files and levels, then
// deletes it, so that GC has older versions beneath the tombstone to (not) expose.
void OverwriteThenDelete(Storage& db, uint64_t token, const std::string& key) {
  REQUIRE_OK(db.Put(token, key, "v1"));
  REQUIRE_OK(db.Flush());
  REQUIRE_OK(db.CompactRange(kAll));  // v1 moves to the bottommost level
  REQUIRE_OK(db.Put(token, key, "v2"));
  REQUIRE_OK(db.Flush());
  REQUIRE_OK(db.Put(token, key, "v3"));
  REQUIRE_OK(db.Put(token, key, "v4"));
  REQUIRE_OK(db.Delete(token, key));
  REQUIRE_OK(db.Flush());
}

TEST_CASE("GC drops tombstones past the grace outside protected ranges", "[storage][gc]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  options.tombstone_grace_ms = 2000;
  auto db = OpenOrDie(dir.path(), options);

  constexpr uint64_t kDeleted = 1000;    // overwritten, then deleted
  constexpr uint64_t kLive = 2000;       // never deleted
  constexpr uint64_t kProtected = 3000;  // deleted inside a protected range
  constexpr uint64_t kYoung = 4000;      // deleted later, still within the grace
  OverwriteThenDelete(*db, kProtected, "k");
  OverwriteThenDelete(*db, kDeleted, "k");  // second: its versions stay spread over levels
  REQUIRE_OK(db->Put(kLive, "k", "live"));
  auto protection = db->ProtectRange({2500, 3500});
  REQUIRE_OK(protection);
  CHECK(db->ProtectedRangeList() == std::vector<TokenRange>{{2500, 3500}});
  CHECK(InternalEntries(*db, kDeleted) > 1);

  clock.Advance(2000);  // exactly the grace: still kept
  REQUIRE_OK(db->CompactRange(kAll));
  CHECK(db->GetEnvelope(kDeleted, "k")->tombstone);
  CHECK(db->TombstonesDropped() == 0);

  clock.Advance(1);
  REQUIRE_OK(db->Put(kYoung, "k", "y"));
  REQUIRE_OK(db->Delete(kYoung, "k"));
  REQUIRE_OK(db->CompactRange(kAll));

  // The expired tombstone and every version beneath it are physically gone...
  CHECK(db->Get(kDeleted, "k").status().IsNotFound());
  CHECK(db->GetEnvelope(kDeleted, "k").status().IsNotFound());
  CHECK(InternalEntries(*db, kDeleted) == 0);
  CHECK(db->TombstonesDropped() == 1);
  // ...while live values, protected tombstones and young tombstones stay.
  CHECK(*db->Get(kLive, "k") == "live");
  CHECK(db->GetEnvelope(kProtected, "k")->tombstone);
  CHECK(db->GetEnvelope(kYoung, "k")->tombstone);

  // Unprotecting lets the next compaction collect it.
  REQUIRE_OK(db->UnprotectRange(*protection));
  CHECK(db->UnprotectRange(*protection).IsNotFound());
  REQUIRE_OK(db->CompactRange({kProtected, kProtected}));
  CHECK(db->GetEnvelope(kProtected, "k").status().IsNotFound());
  CHECK(InternalEntries(*db, kProtected) == 0);

  clock.Advance(2001);
  REQUIRE_OK(db->CompactRange(kAll));
  CHECK(db->GetEnvelope(kYoung, "k").status().IsNotFound());
  CHECK(db->TombstonesDropped() == 3);

  // Still deleted after a restart, and nothing older came back anywhere.
  REQUIRE_OK(db->Close());
  db = OpenOrDie(dir.path(), options);
  CHECK(db->Get(kDeleted, "k").status().IsNotFound());
  CHECK(db->Get(kProtected, "k").status().IsNotFound());
  CHECK(*db->Get(kLive, "k") == "live");
  auto all = db->Scan(kAll, {});
  REQUIRE_OK(all);
  CHECK(all->entries.size() == 1);
}

TEST_CASE("GC with the real clock: a deleted key stays deleted after the grace", "[storage][gc]") {
  TempDir dir;
  StorageOptions options = TestOptions();
  options.tombstone_grace_ms = 1000;
  auto db = OpenOrDie(dir.path(), options);
  OverwriteThenDelete(*db, 77, "user:1");
  auto tombstone = db->GetEnvelope(77, "user:1");
  REQUIRE_OK(tombstone);
  REQUIRE(tombstone->tombstone);

  // Sleep until the computed expiry (not a guess), then poll compaction with a deadline.
  const uint64_t expiry_ms = common::HlcClock::PhysicalMs(tombstone->timestamp) + 1000 + 1;
  while (common::HlcClock::WallClockMs() < expiry_ms) {
    std::this_thread::sleep_for(
        std::chrono::milliseconds(expiry_ms - common::HlcClock::WallClockMs()));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t remaining = 0;
  do {
    REQUIRE_OK(db->CompactRange(kAll));
    remaining = InternalEntries(*db, 77);
    if (remaining == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  CHECK(remaining == 0);
  CHECK(db->Get(77, "user:1").status().IsNotFound());
  CHECK(db->TombstonesDropped() == 1);
}

}  // namespace
}  // namespace shardkv::storage
