// KeyCounter: how many live keys the data column family holds, kept up to date by every write
// (design.md "Storage format", live-key count). DBSIZE, INFO keyspace, `cluster status` and the
// shardkv_live_keys metric read it; RocksDB's own estimate counts tombstones, overwritten
// versions and expired values, so it said 250,002 keys right after a FLUSHALL.
//
// What counts: a record whose value register holds a value (not a tombstone, not an expiry-only
// record) whose expiry, if it has one, has not passed. Every write that changes a record reports
// the record's shape before and after (Replace), so the count moves by -1, 0 or +1; a record that
// goes away without a write (a range dropped, a count started at Open) is subtracted or added
// through Add/Remove by whoever scans it (key_count_worker.h).
//
// Expiry is judged without touching the records: an index of expiry times, in buckets of
// `granularity_ms` (1 s at first), counts the valued records expiring in each bucket. Counts()
// moves every bucket whose end has passed from "live" to "expired", so an expired key stops
// counting at most one granularity after its expiry. The index holds at most kMaxBuckets buckets
// (about 3 MiB): beyond that the granularity doubles and neighbouring buckets merge (their ends
// stay aligned, so a record is always found in the bucket it was added to); at that moment the
// keys of the one bucket straddling the new granularity may stop counting up to one granularity
// early. Tombstone GC needs no hook: it drops only tombstones (never counted) and values expired
// for the whole grace (counted as expired already, and a dropped record's two entries cancel).
//
// Thread-safety: thread-safe. Replace/Add/Remove of records without an expiry are one atomic
// add; those with an expiry take the index's mutex.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {

// What a record contributes to the count.
struct KeyShape {
  bool value =
      false;  // the value register holds a value, or a counter counts (live unless expired)
  uint64_t expires_at_ms = 0;  // its expiry (Unix ms), 0 = none

  static KeyShape Of(const Envelope& e) {
    const bool value = e.has_value() || e.counter_active() || e.hash_live() || e.set_live();
    return {value, value ? e.expires_at_ms() : 0};
  }
  static KeyShape Of(const EnvelopeView& v) {
    const bool value =
        (!v.tombstone && !v.value_absent) || v.counter_active || v.hash_live || v.set_live;
    return {value, value ? v.expires_at_ms : 0};
  }
};

// The count at one moment (Storage::LiveKeys).
struct LiveKeyCounts {
  int64_t keys = 0;      // records holding a value whose expiry (if any) has not passed
  int64_t expiring = 0;  // of `keys`: those with an expiry
  // An expired key may count for up to this long after its expiry.
  uint64_t granularity_ms = 0;
  // False while a count of existing records (the one started at Open, or the subtraction of a
  // dropped range) is still running: `keys` is then partial.
  bool complete = false;
};

class KeyCounter {
 public:
  static constexpr uint64_t kInitialGranularityMs = 1000;
  static constexpr size_t kMaxBuckets = size_t{1} << 16;

  KeyCounter() = default;
  KeyCounter(const KeyCounter&) = delete;
  KeyCounter& operator=(const KeyCounter&) = delete;

  // A write changed a key's record from `before` (null: there was none) to `after`.
  void Replace(const KeyShape* before, const KeyShape& after);
  // A record found by a scan of existing data (Add), or dropped without a write (Remove).
  void Add(const KeyShape& shape) { Apply(shape, +1); }
  void Remove(const KeyShape& shape) { Apply(shape, -1); }

  // The counts at wall-clock `now_ms` (buckets ending at or before it have expired); negative
  // partial figures of an incomplete count are reported as 0. `complete` is the caller's.
  LiveKeyCounts Counts(uint64_t now_ms);

  // The end of the bucket `expires_at_ms` falls in at granularity `g`: the first multiple of g at
  // or after it (UINT64_MAX if there is none).
  static uint64_t BucketEnd(uint64_t expires_at_ms, uint64_t g);

 private:
  void Apply(const KeyShape& shape, int sign);
  void ApplyExpiry(uint64_t expires_at_ms, int sign) REQUIRES(mu_);
  void Advance(uint64_t now_ms) REQUIRES(mu_);
  void Coarsen() REQUIRES(mu_);

  // Records holding a value, expired or not (expiry-less ones change it without the mutex).
  std::atomic<int64_t> values_{0};
  common::Mutex mu_;
  // Bucket end (Unix ms, a multiple of granularity_) -> valued records expiring in that bucket;
  // only buckets ending after watermark_.
  std::map<uint64_t, int64_t> buckets_ GUARDED_BY(mu_);
  int64_t pending_ GUARDED_BY(mu_) = 0;     // the sum of buckets_
  int64_t expired_ GUARDED_BY(mu_) = 0;     // valued records whose bucket ended at or before it
  uint64_t watermark_ GUARDED_BY(mu_) = 0;  // a multiple of granularity_; only moves forward
  uint64_t granularity_ GUARDED_BY(mu_) = kInitialGranularityMs;
};

}  // namespace shardkv::storage
