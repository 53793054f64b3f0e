// Tombstone garbage collection for the `data` column family.
//
// A delete writes a tombstone envelope so that the delete streams, replicates and wins LWW like
// any write. Once a tombstone is older than tombstone_grace (Cassandra's gc_grace_seconds, 10
// days by default) every replica is assumed to have it, and a compaction filter drops it.
//
// Why a compaction filter is safe here: values are plain Puts (no merge operands), so the filter
// sees each key's newest surviving version. When it removes a tombstone, RocksDB turns the entry
// into an internal deletion at the same sequence number, which still hides any older version
// of the key in lower levels; at the bottommost level both disappear. The deleted key therefore
// stays deleted: no older value is exposed.
//
// Expired values are garbage too: once a value's expiry has been past for tombstone_grace, the
// filter drops it under the same rule (dropping it leaves an internal deletion, as above, so no
// older version reappears; and an EXPIRE-only or PERSIST-only record is collected like a
// tombstone).
//
// Protected ranges: a token range with an active stream or pending hints must keep its
// tombstones even past the grace (a streamed or hinted older value could otherwise come back
// with nothing newer to lose to). Callers register such ranges in ProtectedRanges; the filter
// consults it for every expired tombstone.
//
// Repair horizons (the GC rule of anti-entropy, design.md "Tombstones and GC"): with them, a
// record past the grace is collected only if its newest timestamp is also below its range's
// horizon, the start of the last repair that compared the range with every replica. Collecting
// a tombstone that one replica lacks would let that replica's older value come back by repair
// (or a quorum read); below the horizon every replica held it, so none has an older value left.
// A token in no registered range has horizon 0 and keeps everything: a range not yet repaired
// (new here, or the node has no map). The node keeps the horizons (rebalance/gc_horizon.h).
//
// This header stays free of RocksDB includes: the decision logic (TombstoneGc) is plain C++ and
// unit-testable, and the RocksDB factory is only forward-declared.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "shardkv/status.h"
#include "storage/key_codec.h"

namespace rocksdb {
class CompactionFilterFactory;
}  // namespace rocksdb

namespace shardkv::storage {

// A registry of token ranges whose tombstones must not be collected.
// Registrations may overlap; each is removed by the id Add returned.
// Thread-safety: all methods may be called concurrently (compaction threads call Contains while
// the node adds and removes ranges).
class ProtectedRanges {
 public:
  // REQUIRES: range.Valid(). Returns an id for Remove (never 0).
  uint64_t Add(const TokenRange& range);
  // NotFound if `id` is not registered.
  [[nodiscard]] Status Remove(uint64_t id);
  bool Contains(uint64_t token) const;
  std::vector<TokenRange> List() const;

 private:
  mutable common::Mutex mu_;
  // A linear scan is fine: the registry holds one entry per active stream or hinted range (tens),
  // and it is consulted only for tombstones already past the grace, not for every key.
  std::map<uint64_t, TokenRange> ranges_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
};

// Per token range, the repair horizon in Unix ms. Thread-safety: as ProtectedRanges.
class RepairHorizons {
 public:
  // Replaces them all. Ranges must not overlap (a later one overlapping an earlier is dropped).
  // A set of an older `generation` than the newest Set or Invalidate is ignored.
  void Set(std::vector<std::pair<TokenRange, uint64_t>> horizons, uint64_t generation = 0);
  // Drops them all until a Set of `generation` or newer.
  void Invalidate(uint64_t generation);
  // The horizon of the range holding `token`; 0 if none does.
  uint64_t Of(uint64_t token) const;

 private:
  mutable common::Mutex mu_;
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> by_first_ GUARDED_BY(mu_);  // -> last, ms
  uint64_t generation_ GUARDED_BY(mu_) = 0;
};

// Decides whether a data-CF entry may be dropped. Thread-safe: decisions are const, counters are
// atomic.
class TombstoneGc {
 public:
  // `clock_ms` returns wall-clock milliseconds (null = system clock).
  // `horizons` null: the grace alone decides.
  TombstoneGc(uint64_t grace_ms, std::function<uint64_t()> clock_ms,
              std::shared_ptr<const ProtectedRanges> protected_ranges,
              std::shared_ptr<const RepairHorizons> horizons = nullptr);

  // True iff (stored_key, stored_value) is, outside every protected range, a well-formed
  //   - tombstone or expiry-only record whose newest register's HLC timestamp is more than
  //     grace_ms before `now_ms`, or
  //   - value whose expires_at_ms is more than grace_ms before `now_ms`,
  // and, with horizons, whose newest register's physical time is below its token's horizon.
  // Anything that does not decode is kept: GC never deletes what it does not understand.
  bool ShouldDrop(std::string_view stored_key, std::string_view stored_value,
                  uint64_t now_ms) const;
  // ShouldDrop at the current time, counting the outcome.
  bool ShouldDropNow(std::string_view stored_key, std::string_view stored_value) const;

  uint64_t grace_ms() const { return grace_ms_; }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  uint64_t kept_protected() const { return kept_protected_.load(std::memory_order_relaxed); }
  uint64_t kept_unrepaired() const { return kept_unrepaired_.load(std::memory_order_relaxed); }

 private:
  enum class Verdict { kKeep, kKeepProtected, kKeepUnrepaired, kDrop };
  Verdict Decide(std::string_view stored_key, std::string_view stored_value, uint64_t now_ms) const;

  const uint64_t grace_ms_;
  const std::function<uint64_t()> clock_ms_;
  const std::shared_ptr<const ProtectedRanges> protected_ranges_;
  const std::shared_ptr<const RepairHorizons> horizons_;
  mutable std::atomic<uint64_t> dropped_{0};
  mutable std::atomic<uint64_t> kept_protected_{0};
  mutable std::atomic<uint64_t> kept_unrepaired_{0};
};

// A RocksDB CompactionFilterFactory whose filters apply `gc` to every compaction of the data CF.
std::shared_ptr<rocksdb::CompactionFilterFactory> NewTombstoneFilterFactory(
    std::shared_ptr<const TombstoneGc> gc);

}  // namespace shardkv::storage
