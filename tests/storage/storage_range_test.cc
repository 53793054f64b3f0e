// Storage: token-range scans, snapshots, batch apply, DeleteRange and size estimates.
#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "storage/storage.h"
#include "storage/storage_test_util.h"

namespace shardkv::storage {
namespace {

using testing::OpenOrDie;
using testing::TempDir;
using testing::TestOptions;

// ScanOptions builders (designated initializers would trip -Wmissing-field-initializers).
ScanOptions Entries(size_t max_entries) {
  ScanOptions o;
  o.max_entries = max_entries;
  return o;
}
ScanOptions Bytes(size_t max_bytes) {
  ScanOptions o;
  o.max_bytes = max_bytes;
  return o;
}
ScanOptions LiveOnly(size_t max_entries = 1024) {
  ScanOptions o = Entries(max_entries);
  o.include_tombstones = false;
  return o;
}
ScanOptions At(const StorageSnapshot* snapshot, size_t max_entries) {
  ScanOptions o = Entries(max_entries);
  o.snapshot = snapshot;
  return o;
}
ScanOptions After(std::string cursor) {
  ScanOptions o;
  o.cursor = std::move(cursor);
  return o;
}

// Collects a whole range by resuming batch after batch.
std::vector<RangeEntry> ScanAll(Storage& db, const TokenRange& range, ScanOptions options,
                                size_t* batches = nullptr) {
  std::vector<RangeEntry> out;
  size_t n = 0;
  for (;;) {
    auto batch = db.Scan(range, options);
    REQUIRE_OK(batch);
    ++n;
    REQUIRE(n < 100000);
    for (auto& e : batch->entries) out.push_back(std::move(e));
    if (batch->done) break;
    options.cursor = batch->cursor;
  }
  if (batches != nullptr) *batches = n;
  return out;
}

std::vector<uint64_t> Tokens(const std::vector<RangeEntry>& entries) {
  std::vector<uint64_t> out;
  for (const auto& e : entries) out.push_back(e.token);
  return out;
}

// Keys at the edges of the token space, several per token, including user keys of 0xff bytes
// (which no finite exclusive end key bounds at token UINT64_MAX).
class EdgeFixture {
 public:
  EdgeFixture() : db_(OpenOrDie(dir_.path(), TestOptions())) {
    for (uint64_t token : kTokens) {
      for (const std::string& key : Keys()) REQUIRE_OK(db_->Put(token, key, "v"));
    }
  }
  static constexpr uint64_t kTokens[] = {0, 1, uint64_t{1} << 63, UINT64_MAX - 1, UINT64_MAX};
  static std::vector<std::string> Keys() { return {"", "a", std::string(12, '\xff')}; }

 protected:
  TempDir dir_;
  std::unique_ptr<Storage> db_;
};

TEST_CASE_METHOD(EdgeFixture, "Scan covers inclusive token ranges up to 0 and UINT64_MAX",
                 "[storage][range]") {
  const auto all = ScanAll(*db_, {0, UINT64_MAX}, {});
  REQUIRE(all.size() == 15);
  CHECK(std::is_sorted(all.begin(), all.end(), [](const RangeEntry& a, const RangeEntry& b) {
    return EncodeDataKey(a.token, a.key) < EncodeDataKey(b.token, b.key);
  }));
  CHECK(all.front().token == 0);
  CHECK(all.front().key.empty());
  CHECK(all.back().token == UINT64_MAX);
  CHECK(all.back().key == std::string(12, '\xff'));

  CHECK(Tokens(ScanAll(*db_, {0, 0}, {})) == std::vector<uint64_t>{0, 0, 0});
  CHECK(Tokens(ScanAll(*db_, {UINT64_MAX, UINT64_MAX}, {})) ==
        std::vector<uint64_t>{UINT64_MAX, UINT64_MAX, UINT64_MAX});
  CHECK(ScanAll(*db_, {1, UINT64_MAX - 1}, {}).size() == 9);
  CHECK(ScanAll(*db_, {2, (uint64_t{1} << 63) - 1}, {}).empty());
  CHECK(db_->Scan({5, 4}, {}).status().IsInvalidArgument());

  // Values and versions come back whole.
  CHECK(all[0].envelope.value == "v");
  CHECK_FALSE(all[0].envelope.tombstone);
  CHECK(all[0].envelope.node_id == 1);
}

TEST_CASE_METHOD(EdgeFixture, "DeleteRange at the edges of the token space", "[storage][range]") {
  SECTION("top of the ring, including token UINT64_MAX") {
    REQUIRE_OK(db_->DeleteRange({UINT64_MAX - 1, UINT64_MAX}));
    CHECK(Tokens(ScanAll(*db_, {0, UINT64_MAX}, {})) ==
          std::vector<uint64_t>{0, 0, 0, 1, 1, 1, 1ULL << 63, 1ULL << 63, 1ULL << 63});
  }
  SECTION("only token UINT64_MAX") {
    REQUIRE_OK(db_->DeleteRange({UINT64_MAX, UINT64_MAX}));
    CHECK(ScanAll(*db_, {0, UINT64_MAX}, {}).size() == 12);
    CHECK(ScanAll(*db_, {UINT64_MAX, UINT64_MAX}, {}).empty());
  }
  SECTION("only token 0") {
    REQUIRE_OK(db_->DeleteRange({0, 0}));
    CHECK(ScanAll(*db_, {0, UINT64_MAX}, {}).size() == 12);
    CHECK(db_->Get(1, "a").ok());
  }
  SECTION("a middle range") {
    REQUIRE_OK(db_->DeleteRange({1, uint64_t{1} << 63}));
    CHECK(Tokens(ScanAll(*db_, {0, UINT64_MAX}, {})) ==
          std::vector<uint64_t>{0, 0, 0, UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX,
                                UINT64_MAX, UINT64_MAX});
  }
  SECTION("the whole ring, then the range is writable again") {
    REQUIRE_OK(db_->DeleteRange({0, UINT64_MAX}));
    CHECK(ScanAll(*db_, {0, UINT64_MAX}, {}).empty());
    CHECK(db_->Get(UINT64_MAX, std::string(12, '\xff')).status().IsNotFound());
    REQUIRE_OK(db_->Put(UINT64_MAX, "again", "v"));
    CHECK(ScanAll(*db_, {0, UINT64_MAX}, {}).size() == 1);
  }
  CHECK(db_->DeleteRange({2, 1}).IsInvalidArgument());
}

TEST_CASE("DeleteRanges: many arcs in one write, point deletes for a few records, none for none",
          "[storage][range]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  auto put = [&](uint64_t first, int n) {
    for (int i = 0; i < n; ++i) REQUIRE_OK(db->Put(first + i, "k" + std::to_string(i), "v"));
  };
  put(100, 5);   // a small arc
  put(300, 40);  // an arc above the point-delete limit: one range tombstone
  put(500, 10);  // kept
  put(1000, 2);  // the top arc, with token UINT64_MAX
  REQUIRE_OK(db->Put(UINT64_MAX, "top", "v"));
  auto mem_deletes = [&] { return db->RocksIntProperty("rocksdb.num-deletes-active-mem-table"); };
  auto mem_entries = [&] { return db->RocksIntProperty("rocksdb.num-entries-active-mem-table"); };
  REQUIRE(mem_deletes() == 0u);

  // Empty arcs write nothing at all; a bad range refuses the whole call.
  const auto entries = mem_entries();
  auto none = db->DeleteRanges({{200, 299}, {400, 499}, {700, 999}});
  REQUIRE_OK(none.status());
  CHECK(*none == 0);
  CHECK(mem_entries() == entries);
  CHECK(db->DeleteRanges({{100, 199}, {9, 8}}).status().IsInvalidArgument());
  CHECK(ScanAll(*db, {0, UINT64_MAX}, {}).size() == 58);

  // Out of order, with empty arcs among them.
  auto held = db->DeleteRanges({{1000, UINT64_MAX}, {200, 299}, {100, 199}, {300, 399}});
  REQUIRE_OK(held.status());
  CHECK(*held == 3);
  const auto left = ScanAll(*db, {0, UINT64_MAX}, {});
  REQUIRE(left.size() == 10);
  for (const auto& e : left) CHECK((e.token >= 500 && e.token < 510));
  // 5 + 3 point deletes; the 40-record arc is one range tombstone, not 40 deletes.
  CHECK(mem_deletes() == 8u);

  // The live-key count lost exactly what was dropped (the large arc in the background).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  LiveKeyCounts n = db->LiveKeys();
  while (!n.complete && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling the worker, bounded
    n = db->LiveKeys();
  }
  REQUIRE(n.complete);
  CHECK(n.keys == 10);
  REQUIRE_OK(db->Close());
  db = OpenOrDie(dir.path(), TestOptions());
  CHECK(ScanAll(*db, {0, UINT64_MAX}, {}).size() == 10);
}

TEST_CASE("Scan in batches resumes from the cursor without gaps or repeats", "[storage][range]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  std::mt19937_64 rng(20240601);
  std::vector<uint64_t> tokens;
  for (int i = 0; i < 1000; ++i) {
    tokens.push_back(rng());
    REQUIRE_OK(db->Put(tokens.back(), "k" + std::to_string(i), std::string(rng() % 64, 'x')));
  }
  // Some tombstones among them: scans return them like values.
  for (int i = 0; i < 1000; i += 10) REQUIRE_OK(db->Delete(tokens[i], "k" + std::to_string(i)));
  const auto reference = ScanAll(*db, {0, UINT64_MAX}, Entries(1u << 20));
  REQUIRE(reference.size() == 1000);

  for (size_t max_entries : {1u, 7u, 999u, 1000u, 1001u}) {
    size_t batches = 0;
    const auto got = ScanAll(*db, {0, UINT64_MAX}, Entries(max_entries), &batches);
    CHECK(got == reference);
    CHECK(batches >= (1000 + max_entries - 1) / max_entries);
  }
  // A byte budget ends batches early too.
  size_t batches = 0;
  CHECK(ScanAll(*db, {0, UINT64_MAX}, Bytes(500), &batches) == reference);
  CHECK(batches > 20);

  // A sub-range resumes within its bounds.
  const TokenRange half{0, UINT64_MAX / 2};
  const auto half_ref = ScanAll(*db, half, Entries(1u << 20));
  CHECK(ScanAll(*db, half, Entries(13)) == half_ref);
  for (const auto& e : half_ref) CHECK(half.Contains(e.token));

  // The cursor is stable across a restart (streams checkpoint it).
  auto first = db->Scan({0, UINT64_MAX}, Entries(400));
  REQUIRE_OK(first);
  const std::string cursor = first->cursor;
  REQUIRE_OK(db->Close());
  db = OpenOrDie(dir.path(), TestOptions());
  auto rest = ScanAll(*db, {0, UINT64_MAX}, After(cursor));
  REQUIRE(rest.size() == 600);
  CHECK(rest.front() == reference[400]);
}

TEST_CASE("Scan can skip tombstones and still advance", "[storage][range]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  for (uint64_t t = 0; t < 100; ++t) REQUIRE_OK(db->Put(t, "k", "v"));
  for (uint64_t t = 0; t < 100; t += 2) REQUIRE_OK(db->Delete(t, "k"));

  CHECK(ScanAll(*db, {0, 99}, Entries(3)).size() == 100);
  const auto live = ScanAll(*db, {0, 99}, LiveOnly(3));
  REQUIRE(live.size() == 50);
  for (const auto& e : live) CHECK(e.token % 2 == 1);

  // A batch that skipped only tombstones still moves the cursor forward.
  auto b = db->Scan({0, 0}, LiveOnly());
  REQUIRE_OK(b);
  CHECK(b->entries.empty());
  CHECK(b->done);
  CHECK(b->cursor == EncodeDataKey(0, "k"));
}

TEST_CASE("Scan through a snapshot sees the data as of the snapshot", "[storage][range]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  for (uint64_t t = 0; t < 50; ++t) REQUIRE_OK(db->Put(t, "k", "old"));
  auto snapshot = db->NewSnapshot();
  REQUIRE(snapshot != nullptr);
  CHECK(snapshot->created_at_ms() > 0);
  for (uint64_t t = 0; t < 50; ++t) REQUIRE_OK(db->Put(t, "k", "new"));
  REQUIRE_OK(db->Delete(7, "k"));
  REQUIRE_OK(db->Put(1000, "k", "added"));
  REQUIRE_OK(db->Flush());  // snapshots survive flushes and compactions
  REQUIRE_OK(db->CompactRange({0, UINT64_MAX}));

  const auto old = ScanAll(*db, {0, UINT64_MAX}, At(snapshot.get(), 9));
  REQUIRE(old.size() == 50);
  for (const auto& e : old) CHECK(e.envelope.value == "old");

  const auto now = ScanAll(*db, {0, UINT64_MAX}, LiveOnly());
  CHECK(now.size() == 50);  // 49 live "new" + "added"
  snapshot.reset();
}

TEST_CASE("ApplyBatch applies entries with LWW and is idempotent", "[storage][range]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  const uint64_t base = common::HlcClock::Make(common::HlcClock::WallClockMs() - 60'000, 0);
  REQUIRE_OK(db->Write(1, "a", Envelope{base + 10, 1, false, "stored-newer"}));
  REQUIRE_OK(db->Write(2, "b", Envelope{base + 10, 1, false, "stored-older"}));
  REQUIRE_OK(db->Write(3, "c", Envelope{base + 10, 1, false, "same"}));

  const std::vector<RangeEntry> batch = {
      {1, "a", {base + 5, 9, false, "stale"}},     // superseded by the stored version
      {2, "b", {base + 20, 1, false, "fresher"}},  // applied
      {3, "c", {base + 10, 1, false, "same"}},     // duplicate of the stored version
      {4, "d", {base + 1, 1, false, "first"}},     // new key, but...
      {4, "d", {base + 2, 1, true, ""}},           // ...deleted later in the same batch
      {5, "e", {base + 3, 2, false, "new"}},       // applied
      {5, "e", {base + 3, 2, false, "new"}},       // repeated inside the batch
  };
  auto stats = db->ApplyBatch(batch);
  REQUIRE_OK(stats);
  CHECK(stats->applied == 3);     // b, d (tombstone), e
  CHECK(stats->superseded == 2);  // a, the older d
  CHECK(stats->duplicate == 2);   // c, the repeated e

  CHECK(*db->Get(1, "a") == "stored-newer");
  CHECK(*db->Get(2, "b") == "fresher");
  CHECK(*db->Get(3, "c") == "same");
  CHECK(db->Get(4, "d").status().IsNotFound());
  CHECK(db->GetEnvelope(4, "d")->tombstone);
  CHECK(*db->Get(5, "e") == "new");

  auto again = db->ApplyBatch(batch);
  REQUIRE_OK(again);
  CHECK(again->applied == 0);

  // A bad entry rejects the whole batch before anything is written.
  const std::vector<RangeEntry> bad = {{6, "f", {base + 1, 1, false, "ok"}},
                                       {7, "g", {base + 1, 1, true, "tombstone with value"}}};
  CHECK(db->ApplyBatch(bad).status().IsInvalidArgument());
  CHECK(db->Get(6, "f").status().IsNotFound());
  CHECK(db->ApplyBatch({})->applied == 0);
}

TEST_CASE("a streamed range reproduces the source exactly", "[storage][range]") {
  TempDir dir;
  auto source = OpenOrDie(dir.Sub("source"), TestOptions());
  StorageOptions dest_options = TestOptions();
  dest_options.node_id = 2;
  auto dest = OpenOrDie(dir.Sub("dest"), dest_options);
  std::mt19937_64 rng(99);
  for (int i = 0; i < 2000; ++i) {
    REQUIRE_OK(source->Put(rng(), "key" + std::to_string(i), "value" + std::to_string(i)));
  }
  for (int i = 0; i < 200; ++i) REQUIRE_OK(source->Delete(rng(), "gone" + std::to_string(i)));
  // The destination already holds a newer write to one of the keys (a joint write).
  const auto some = source->Scan({0, UINT64_MAX}, Entries(1));
  REQUIRE_OK(some);
  const RangeEntry& first = some->entries.at(0);
  auto joint = dest->Put(first.token, first.key, "joint write");
  REQUIRE_OK(joint);

  const TokenRange range{0, UINT64_MAX};
  auto snapshot = source->NewSnapshot();
  ScanOptions options = At(snapshot.get(), 128);
  for (;;) {
    auto batch = source->Scan(range, options);
    REQUIRE_OK(batch);
    REQUIRE_OK(dest->ApplyBatch(batch->entries));
    if (batch->done) break;
    options.cursor = batch->cursor;
  }
  snapshot.reset();
  auto src_all = ScanAll(*source, range, {});
  auto dst_all = ScanAll(*dest, range, {});
  REQUIRE(src_all.size() == 2200);
  REQUIRE(dst_all.size() == 2200);
  CHECK(dst_all[0].envelope.value == "joint write");  // LWW kept the newer joint write
  dst_all[0] = src_all[0];
  CHECK(dst_all == src_all);
}

TEST_CASE("ApproximateRangeStats estimates keys and bytes per range", "[storage][range]") {
  TempDir dir;
  auto db = OpenOrDie(dir.path(), TestOptions());
  std::mt19937_64 rng(5);
  constexpr int kKeys = 20000;
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE_OK(db->Put(rng(), "key" + std::to_string(i), std::string(100, 'v')));
  }
  // From the memtable: RocksDB estimates memtable counts by sampling the skiplist, which is
  // coarse (seen between 0.45x and 1x here), so only the order of magnitude is checked...
  auto mem = db->ApproximateRangeStats({0, UINT64_MAX});
  REQUIRE_OK(mem);
  CHECK(mem->approximate_keys > kKeys / 10);
  CHECK(mem->approximate_keys < kKeys * 2);
  CHECK(mem->approximate_bytes > 0);

  // ...and from table files.
  REQUIRE_OK(db->Flush());
  auto all = db->ApproximateRangeStats({0, UINT64_MAX});
  REQUIRE_OK(all);
  INFO("keys=" << all->approximate_keys << " bytes=" << all->approximate_bytes);
  CHECK(all->approximate_keys > kKeys * 8 / 10);
  CHECK(all->approximate_keys < kKeys * 12 / 10);
  CHECK(all->approximate_bytes > 100'000);

  auto half = db->ApproximateRangeStats({0, UINT64_MAX / 2});
  REQUIRE_OK(half);
  INFO("half keys=" << half->approximate_keys);
  CHECK(half->approximate_keys > kKeys * 3 / 10);
  CHECK(half->approximate_keys < kKeys * 7 / 10);

  auto tiny = db->ApproximateRangeStats({5, 5});
  REQUIRE_OK(tiny);
  CHECK(tiny->approximate_keys < kKeys / 10);
  CHECK(db->ApproximateRangeStats({5, 4}).status().IsInvalidArgument());
}

}  // namespace
}  // namespace shardkv::storage
