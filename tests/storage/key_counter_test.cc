// KeyCounter (src/storage/key_counter.h): the live-key count a write moves by its record's shape
// before and after, with expiry judged by a bucketed index; checked against a brute-force model.
#include "storage/key_counter.h"

#include <catch2/catch.hpp>
#include <map>
#include <optional>
#include <random>

namespace shardkv::storage {
namespace {

constexpr uint64_t kT0 = 1'700'000'000'000;  // a multiple of 1000

KeyShape Value(uint64_t expires_at_ms = 0) { return {true, expires_at_ms}; }
KeyShape Tombstone() { return {false, 0}; }

}  // namespace

TEST_CASE("key counter: writes move the count by what they replace", "[storage][keys]") {
  KeyCounter c;
  const KeyShape v = Value();
  const KeyShape t = Tombstone();
  c.Replace(nullptr, v);  // a new key
  c.Replace(nullptr, v);
  c.Replace(&v, v);       // an overwrite
  c.Replace(nullptr, t);  // a delete of a key never seen here
  CHECK(c.Counts(kT0).keys == 2);
  c.Replace(&v, t);  // a delete
  CHECK(c.Counts(kT0).keys == 1);
  c.Replace(&t, v);  // a SET over a tombstone
  CHECK(c.Counts(kT0).keys == 2);
  c.Remove(v);
  c.Remove(v);
  CHECK(c.Counts(kT0).keys == 0);
  c.Remove(v);  // a partial count below zero reads as 0
  CHECK(c.Counts(kT0).keys == 0);
}

TEST_CASE("key counter: an expired key stops counting within the granularity", "[storage][keys]") {
  KeyCounter c;
  const KeyShape a = Value(kT0 + 1500);
  const KeyShape b = Value(kT0 + 2000);
  c.Replace(nullptr, a);
  c.Replace(nullptr, b);
  c.Replace(nullptr, Value());
  LiveKeyCounts n = c.Counts(kT0);
  CHECK(n.keys == 3);
  CHECK(n.expiring == 2);
  CHECK(n.granularity_ms == 1000);
  // Both expire in the bucket ending at kT0 + 2000: counted until then (within 1 s of a's expiry).
  CHECK(c.Counts(kT0 + 1999).keys == 3);
  n = c.Counts(kT0 + 2000);
  CHECK(n.keys == 1);
  CHECK(n.expiring == 0);
  // A write over an expired record, and a record written already expired.
  const KeyShape fresh = Value(kT0 + 60'000);
  c.Replace(&a, fresh);
  CHECK(c.Counts(kT0 + 2000).keys == 2);
  c.Replace(nullptr, Value(kT0 + 10));
  CHECK(c.Counts(kT0 + 2000).keys == 2);
  c.Replace(&b, Tombstone());
  CHECK(c.Counts(kT0 + 2000).keys == 2);
  // PERSIST of the fresh one: it no longer expires.
  c.Replace(&fresh, Value());
  n = c.Counts(kT0 + 120'000);
  CHECK(n.keys == 2);
  CHECK(n.expiring == 0);
}

TEST_CASE("key counter: coarsening keeps every record findable, against a model",
          "[storage][keys]") {
  // Many distinct expiry seconds force the index to coarsen several times; the count must stay
  // within the granularity of the model's exact figure.
  std::mt19937_64 rng(2626);
  KeyCounter c;
  std::map<int, std::optional<KeyShape>> records;  // the model: key -> its record
  uint64_t now = kT0;
  const int keys = 100000;
  for (int step = 0; step < 400000; ++step) {
    // First every key once, each expiring in its own second (more buckets than the index keeps),
    // then random writes.
    const int k = step < keys ? step : static_cast<int>(rng() % keys);
    KeyShape next;
    switch (step < keys ? 2 : rng() % 4) {
      case 0:
        next = Tombstone();
        break;
      case 1:
        next = Value();
        break;
      default:  // expiries spread over two days, to the millisecond
        next = Value(step < keys ? now + 1000 * (k + 1) + rng() % 1000
                                 : now + 1 + rng() % (2 * 86'400'000));
    }
    auto& slot = records[k];
    c.Replace(slot ? &*slot : nullptr, next);
    slot = next;
    if (step % 1000 == 0) now += rng() % 120'000;  // time moves on, up to 2 minutes at once
    if (step % 5000 != 0) continue;
    const LiveKeyCounts n = c.Counts(now);
    int64_t live = 0;
    int64_t live_late = 0;   // live, or expired less than a granularity ago
    int64_t live_early = 0;  // live and not expiring within a granularity
    for (const auto& [key, r] : records) {
      if (!r || !r->value) continue;
      const uint64_t e = r->expires_at_ms;
      live += (e == 0 || e > now) ? 1 : 0;
      live_late += (e == 0 || e + n.granularity_ms > now) ? 1 : 0;
      live_early += (e == 0 || e > now + n.granularity_ms) ? 1 : 0;
    }
    INFO("step " << step << " granularity " << n.granularity_ms << " exact " << live);
    CHECK(n.keys <= live_late);
    CHECK(n.keys >= live_early);
  }
  const LiveKeyCounts end = c.Counts(now);
  CHECK(end.granularity_ms > KeyCounter::kInitialGranularityMs);  // it did coarsen
  // Once everything has expired, only the expiry-less values count, and the index is fine again.
  int64_t forever = 0;
  for (const auto& [key, r] : records) forever += r && r->value && r->expires_at_ms == 0 ? 1 : 0;
  const LiveKeyCounts later = c.Counts(now + 3 * 86'400'000);
  CHECK(later.keys == forever);
  CHECK(later.expiring == 0);
  CHECK(later.granularity_ms == KeyCounter::kInitialGranularityMs);
}

TEST_CASE("key counter: bucket ends are aligned and saturate", "[storage][keys]") {
  CHECK(KeyCounter::BucketEnd(1000, 1000) == 1000);
  CHECK(KeyCounter::BucketEnd(1001, 1000) == 2000);
  CHECK(KeyCounter::BucketEnd(1, 2000) == 2000);
  CHECK(KeyCounter::BucketEnd(UINT64_MAX, 1000) == UINT64_MAX);
  KeyCounter c;
  c.Add(Value(UINT64_MAX));
  CHECK(c.Counts(kT0).keys == 1);
}

}  // namespace shardkv::storage
