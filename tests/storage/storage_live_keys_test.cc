// Storage::LiveKeys: the live-key count every write path keeps (Put, Delete, Expire, Write,
// ApplyBatch), DeleteRange subtracts, a reopen recounts, and expiry and tombstone GC leave right.
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

// The counts once the background count is complete (polled: it runs on its own thread).
LiveKeyCounts Settled(Storage& db) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  LiveKeyCounts n = db.LiveKeys();
  while (!n.complete && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling the worker, bounded
    n = db.LiveKeys();
  }
  REQUIRE(n.complete);
  return n;
}

}  // namespace

TEST_CASE("live keys: every write path counts, tombstones and expired values do not",
          "[storage][keys]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);
  CHECK(Settled(*db).keys == 0);

  for (int i = 0; i < 100; ++i) REQUIRE_OK(db->Put(i, "k" + std::to_string(i), "v"));
  REQUIRE_OK(db->Put(5, "k5", "again"));  // an overwrite
  CHECK(Settled(*db).keys == 100);
  for (int i = 0; i < 30; ++i) REQUIRE_OK(db->Delete(i, "k" + std::to_string(i)));
  REQUIRE_OK(db->Delete(1000, "never-written"));  // a tombstone alone
  CHECK(Settled(*db).keys == 70);

  // TTLs: a SET with one, an EXPIRE of a stored key, an EXPIRE of a missing key (an expiry-only
  // record, which reads as absent), a PERSIST.
  REQUIRE_OK(db->Put(200, "ttl", "v", PutExpiry{kStartMs + 5000, false}));
  REQUIRE_OK(db->Expire(40, "k40", kStartMs + 5000));
  REQUIRE_OK(db->Expire(41, "k41", kStartMs + 5000));
  REQUIRE_OK(db->Expire(300, "missing", kStartMs + 5000));
  REQUIRE_OK(db->Expire(41, "k41", 0));
  LiveKeyCounts n = Settled(*db);
  CHECK(n.keys == 71);
  CHECK(n.expiring == 2);

  // Replica writes and a streamed batch, with a duplicate and an older version that loses.
  const uint64_t ts = db->clock().Now().value();
  REQUIRE_OK(db->Write(500, "replicated", Envelope::Plain({ts + 1, 2}, false, "r")));
  REQUIRE_OK(db->Write(500, "replicated", Envelope::Plain({ts + 1, 2}, false, "r")));
  REQUIRE_OK(db->Write(500, "replicated", Envelope::Plain({ts, 2}, true, "")));
  CHECK(Settled(*db).keys == 72);
  std::vector<RangeEntry> batch;
  for (int i = 0; i < 20; ++i) {
    batch.push_back(
        {uint64_t(600 + i), "b" + std::to_string(i), Envelope::Plain({ts + 2, 3}, false, "x")});
  }
  batch.push_back({50, "k50", Envelope::Plain({ts + 2, 3}, true, "")});  // deletes a counted key
  batch.push_back({20, "k20", Envelope::Plain({ts + 2, 3}, false, "back")});  // over a tombstone
  REQUIRE_OK(db->ApplyBatch(batch));
  CHECK(Settled(*db).keys == 71 + 1 + 20 - 1 + 1);

  // Expiry passes: within the granularity, without a write.
  clock.Advance(5000 + Settled(*db).granularity_ms);
  n = Settled(*db);
  CHECK(n.keys == 92 - 2);
  CHECK(n.expiring == 0);

  // A dropped range loses what it held (subtracted in the background): tokens 600..699.
  REQUIRE_OK(db->DeleteRange(TokenRange{600, 699}));
  CHECK(Settled(*db).keys == 90 - 20);
  // Including the top of the ring, whose keys are deleted one by one.
  REQUIRE_OK(db->Put(UINT64_MAX, "top", "v"));
  CHECK(Settled(*db).keys == 71);
  REQUIRE_OK(db->DeleteRange(TokenRange{1000, UINT64_MAX}));
  CHECK(Settled(*db).keys == 70);

  // Tombstone GC after the grace changes nothing: what it drops was not counted.
  clock.Advance(options.tombstone_grace_ms + 1000);
  REQUIRE_OK(db->CompactRange(TokenRange{0, UINT64_MAX}));
  CHECK(db->TombstonesDropped() > 0);
  CHECK(Settled(*db).keys == 70);

  // A reopen recounts from the records: the same figure.
  REQUIRE_OK(db->Close());
  db = OpenOrDie(dir.path(), options);
  n = Settled(*db);
  CHECK(n.keys == 70);
  CHECK(n.expiring == 0);
}

TEST_CASE("live keys: a wipe by deletes reaches 0, and so does everything expiring",
          "[storage][keys]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);
  for (int i = 0; i < 2000; ++i) REQUIRE_OK(db->Put(i, "k" + std::to_string(i), "v"));
  REQUIRE_OK(db->Flush());
  // What FLUSHALL does: a tombstone for every key. RocksDB's estimate still sees thousands.
  for (int i = 0; i < 2000; ++i) REQUIRE_OK(db->Delete(i, "k" + std::to_string(i)));
  CHECK(Settled(*db).keys == 0);
  CHECK(db->ApproximateRangeStats(TokenRange{0, UINT64_MAX})->approximate_keys > 1000);

  for (int i = 0; i < 2000; ++i) {
    REQUIRE_OK(db->Put(i, "t" + std::to_string(i), "v", PutExpiry{kStartMs + 1 + i * 7, false}));
  }
  LiveKeyCounts n = Settled(*db);
  CHECK(n.keys == 2000);
  CHECK(n.expiring == 2000);
  // Restarted while they are live: the recount sees the TTLs too.
  REQUIRE_OK(db->Close());
  db = OpenOrDie(dir.path(), options);
  n = Settled(*db);
  CHECK(n.keys == 2000);
  CHECK(n.expiring == 2000);
  clock.Advance(2000 * 7 / 2);  // about half have expired
  n = Settled(*db);
  CHECK(n.keys < 1100);
  CHECK(n.keys > 900);
  clock.Advance(2000 * 7 / 2 + n.granularity_ms);
  n = Settled(*db);
  CHECK(n.keys == 0);
  CHECK(n.expiring == 0);
}

TEST_CASE("live keys: writes during the count at open are not lost or counted twice",
          "[storage][keys]") {
  TempDir dir;
  StorageOptions options = TestOptions();
  {
    auto db = OpenOrDie(dir.path(), options);
    for (int i = 0; i < 50000; ++i) REQUIRE_OK(db->Put(i, "k" + std::to_string(i), "v"));
    REQUIRE_OK(db->Close());
  }
  auto db = OpenOrDie(dir.path(), options);
  // Right away, while the background count may still run: deletes of counted keys and new keys.
  for (int i = 0; i < 1000; ++i) REQUIRE_OK(db->Delete(i, "k" + std::to_string(i)));
  for (int i = 0; i < 500; ++i) REQUIRE_OK(db->Put(100000 + i, "n" + std::to_string(i), "v"));
  CHECK(Settled(*db).keys == 50000 - 1000 + 500);
}

}  // namespace shardkv::storage
