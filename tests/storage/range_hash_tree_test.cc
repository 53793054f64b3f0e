// RangeHashTree (storage/range_hash_tree.h): entry hashes, span hashes independent of the tree's
// shape, span splitting, and a tree built by a scan seeing damage that bypassed the write path.
#include "storage/range_hash_tree.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "common/hlc.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

namespace shardkv::storage {
namespace {

std::vector<RangeEntry> RandomEntries(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // HLC timestamps of the last minutes: a storage refuses versions from the future.
  const uint64_t now_ms = common::HlcClock::WallClockMs();
  std::vector<RangeEntry> out;
  for (size_t i = 0; i < n; ++i) {
    RangeEntry e;
    e.token = rng();
    e.key = "k" + std::to_string(i);
    e.envelope = Envelope{(now_ms - 100000 + rng() % 50000) << 16, static_cast<uint32_t>(1 + i % 3),
                          i % 7 == 0, i % 7 == 0 ? "" : "v" + std::to_string(i)};
    out.push_back(e);
  }
  std::sort(out.begin(), out.end(), [](const RangeEntry& a, const RangeEntry& b) {
    return a.token != b.token ? a.token < b.token : a.key < b.key;
  });
  return out;
}

}  // namespace

TEST_CASE("hash tree: an equal record hashes alike whatever its expiry encoding") {
  Envelope plain{100, 2, false, "v"};
  Envelope explicit_same = plain;
  explicit_same.SetExpiry(plain.version(), 0);
  REQUIRE(plain == explicit_same);
  CHECK(RangeHashTree::EntryHash(7, "k", plain) == RangeHashTree::EntryHash(7, "k", explicit_same));
  Envelope older{99, 2, false, "v"};
  Envelope tomb{100, 2, true, ""};
  Envelope ttl = Envelope::Plain({100, 2}, false, "v", 5000);
  CHECK(RangeHashTree::EntryHash(7, "k", plain) != RangeHashTree::EntryHash(7, "k", older));
  CHECK(RangeHashTree::EntryHash(7, "k", plain) != RangeHashTree::EntryHash(7, "k", tomb));
  CHECK(RangeHashTree::EntryHash(7, "k", plain) != RangeHashTree::EntryHash(7, "k", ttl));
  CHECK(RangeHashTree::EntryHash(7, "k", plain) != RangeHashTree::EntryHash(8, "k", plain));
  CHECK(RangeHashTree::EntryHash(7, "k", plain) != RangeHashTree::EntryHash(7, "j", plain));
}

TEST_CASE("hash tree: a span's hash is the xor of its children whatever the cut") {
  const auto entries = RandomEntries(5000, 11);
  const TokenRange all{0, UINT64_MAX};
  const auto tree = RangeHashTree::FromEntries(all, entries);
  REQUIRE(tree.size() == 5000);
  CHECK(tree.Root().count == 5000);
  for (uint32_t parts : {2u, 16u, 1000u}) {
    uint64_t x = 0, n = 0;
    for (const TokenRange& c : RangeHashTree::SplitSpan(all, parts)) {
      const auto node = tree.Node(c);
      x ^= node.hash;
      n += node.count;
    }
    CHECK(x == tree.Root().hash);
    CHECK(n == 5000);
  }
  // A tree of one sub-range agrees with the big tree on every span inside it.
  const TokenRange half{0, UINT64_MAX / 2};
  const auto small = RangeHashTree::FromEntries(half, entries);
  for (const TokenRange& c : RangeHashTree::SplitSpan(half, 64)) {
    CHECK(small.Node(c) == tree.Node(c));
  }
}

TEST_CASE("hash tree: split spans cover the span exactly") {
  for (const TokenRange span : {TokenRange{0, UINT64_MAX}, TokenRange{5, 20}, TokenRange{9, 9},
                                TokenRange{UINT64_MAX - 3, UINT64_MAX}}) {
    const auto parts = RangeHashTree::SplitSpan(span, 16);
    REQUIRE(!parts.empty());
    CHECK(parts.front().first == span.first);
    CHECK(parts.back().last == span.last);
    for (size_t i = 0; i < parts.size(); ++i) {
      CHECK(parts[i].Valid());
      if (i > 0) CHECK(parts[i].first == parts[i - 1].last + 1);
    }
    CHECK(parts.size() <= 16);
  }
  CHECK(RangeHashTree::SplitSpan({9, 9}, 16).size() == 1);
}

TEST_CASE("hash tree: a tree built by a scan sees damage that bypassed the write path") {
  testing::TempDir dir;
  auto storage = Storage::Open(dir.Sub("db"), StorageOptions{});
  REQUIRE(storage.ok());
  Storage& s = **storage;
  const auto entries = RandomEntries(300, 5);
  REQUIRE(s.ApplyBatch(entries).ok());
  const TokenRange all{0, UINT64_MAX};
  auto built = RangeHashTree::Build(&s, all);
  REQUIRE(built.ok());
  CHECK(built->Root() == RangeHashTree::FromEntries(all, entries).Root());

  // Removed behind LWW's back: the tree differs, in the span of that token only.
  REQUIRE(s.DebugWriteRawForTest(entries[10].token, entries[10].key, nullptr).ok());
  auto damaged = RangeHashTree::Build(&s, all);
  REQUIRE(damaged.ok());
  CHECK(damaged->Root().count == 299);
  CHECK(damaged->Root().hash != built->Root().hash);
  CHECK(damaged->Node({0, entries[10].token - 1}) == built->Node({0, entries[10].token - 1}));

  // An older version written over the newer one.
  REQUIRE(s.DebugWriteRawForTest(entries[10].token, entries[10].key, &entries[10].envelope).ok());
  Envelope older = entries[20].envelope;
  older.timestamp -= 1;
  REQUIRE(s.DebugWriteRawForTest(entries[20].token, entries[20].key, &older).ok());
  auto aged = RangeHashTree::Build(&s, all);
  REQUIRE(aged.ok());
  CHECK(aged->Root().count == 300);
  CHECK(aged->Root().hash != built->Root().hash);
  REQUIRE(s.Close().ok());
}

TEST_CASE("hash tree: a scan without value bytes keeps everything the entry hash reads") {
  testing::TempDir dir;
  auto storage = Storage::Open(dir.Sub("db"), StorageOptions{});
  REQUIRE(storage.ok());
  Storage& s = **storage;
  auto entries = RandomEntries(200, 9);
  // Some with an expiry, and one expiry-only record (no value register).
  for (size_t i = 1; i < entries.size(); i += 5) {
    Envelope& e = entries[i].envelope;
    if (!e.tombstone) e.SetExpiry(e.version(), common::HlcClock::WallClockMs() + 3600000);
  }
  entries[2].envelope = Envelope{0, 0, false, ""};
  entries[2].envelope.value_absent = true;
  entries[2].envelope.SetExpiry(Version{entries[3].envelope.timestamp, 2}, 0);
  REQUIRE(s.ApplyBatch(entries).ok());
  ScanOptions options;
  options.max_entries = 1000;
  options.values = false;
  auto bare = s.Scan({0, UINT64_MAX}, options);
  REQUIRE(bare.ok());
  options.values = true;
  auto full = s.Scan({0, UINT64_MAX}, options);
  REQUIRE(full.ok());
  REQUIRE(bare->entries.size() == entries.size());
  REQUIRE(full->entries.size() == entries.size());
  size_t with_value = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const RangeEntry& b = bare->entries[i];
    const RangeEntry& f = full->entries[i];
    INFO(f.key);
    CHECK(b.token == f.token);
    CHECK(b.key == f.key);
    CHECK(b.envelope.value.empty());
    with_value += f.envelope.value.empty() ? 0 : 1;
    CHECK(b.envelope.version() == f.envelope.version());
    CHECK(b.envelope.tombstone == f.envelope.tombstone);
    CHECK(b.envelope.value_absent == f.envelope.value_absent);
    CHECK(b.envelope.expiry_version() == f.envelope.expiry_version());
    CHECK(b.envelope.expires_at_ms() == f.envelope.expires_at_ms());
    CHECK(RangeHashTree::EntryHash(b.token, b.key, b.envelope) ==
          RangeHashTree::EntryHash(f.token, f.key, f.envelope));
  }
  CHECK(with_value > 100);
  // The tree (built without value bytes) equals one of the full entries.
  auto built = RangeHashTree::Build(&s, {0, UINT64_MAX});
  REQUIRE(built.ok());
  CHECK(built->Root() == RangeHashTree::FromEntries({0, UINT64_MAX}, full->entries).Root());
  REQUIRE(s.Close().ok());
}

}  // namespace shardkv::storage
