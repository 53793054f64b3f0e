// HintStore: hinted handoff (design.md "Replication and consistency"). A write that a replica
// missed (down or timed out) is kept on the coordinator in the `hints` column family and replayed
// when the replica is back. Hints are repair only: they never count toward a write quorum.
//
// Layout: key = target node id ‖ token ‖ sequence (storage/key_codec.h), value = 4-byte key
// length ‖ user key ‖ value envelope. Hints for one target are contiguous, in token order.
//
// While any hint is pending, tombstone GC is suspended on the whole token space (a coarse but
// safe reading of "never in a token range that has pending hints": a hint is a write the target
// has not seen, so collecting the tombstones it would be compared with could resurrect data).
//
// A hint whose write is older than tombstone_grace is dropped instead of replayed, and its
// target is recorded as needing repair (its replica can no longer be made whole by hints): meta
// key `cluster/needs_repair/<target>`, whose value is the newest such write's physical time (Unix
// ms). The time lets a rebuild, or a repair of every range the target holds, that started later
// retire the mark (ClearMark): the target pulled every acknowledged write older than its start
// from the other replicas. RepairState
// (repair_state.h) publishes the marks and tells the target.
//
// Thread-safety: all methods are thread-safe; Replay() of one target is not run concurrently
// with itself (the caller's replay loop is single-threaded).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "shardkv/status.h"
#include "storage/storage.h"

namespace shardkv::cluster {

// A decimal u64 as the meta values of hints and repair marks store it: digits only, no overflow.
bool ParseDecimal(std::string_view text, uint64_t* out);

class HintStore {
 public:
  // Sends one hinted write to its target; OK means the target applied (or superseded) it.
  using Sender =
      std::function<Status(uint64_t token, const std::string& key, const storage::Envelope&)>;

  // REQUIRES: storage outlives the store. `now_ms` gives wall-clock ms (for the grace check).
  HintStore(storage::Storage* storage, uint64_t grace_ms, std::function<uint64_t()> now_ms);

  // Counts what the hints CF holds (call once after open).
  [[nodiscard]] Status Load();
  [[nodiscard]] Status Add(uint32_t target, uint64_t token, std::string_view key,
                           const storage::Envelope& envelope);
  // Replays up to `max` hints for `target` in order, deleting each one the sender accepts.
  // Stops at the first send error (the target is still unreachable). Returns hints delivered.
  StatusOr<size_t> Replay(uint32_t target, size_t max, const Sender& send);

  // Deletes every hint for `target` unsent: it left the cluster, and the ranges it held were
  // streamed to their new owners. Returns how many were deleted.
  StatusOr<size_t> Discard(uint32_t target);

  std::vector<uint32_t> Targets() const;
  uint64_t pending() const { return pending_.load(); }
  uint64_t replayed() const { return replayed_.load(); }
  uint64_t expired() const { return expired_.load(); }
  uint64_t discarded() const { return discarded_.load(); }
  // Targets that lost hints to the grace period: they need repair (a repair of every range they
  // hold, or a rebuild) before they serve reads again.
  std::vector<uint32_t> NeedsRepair() const;
  // The same, with the newest expired write's physical time (Unix ms; 1 for a mark written
  // before marks carried a time).
  std::map<uint32_t, uint64_t> RepairMarks() const;
  // Marks every target with a pending hint older than the grace (Replay marks only targets that
  // answer, so a node still away is marked here, before it comes back). Scans a target's hints
  // only when the oldest one known may be overdue and is not covered by its mark yet. Returns
  // the targets newly marked.
  size_t MarkOverdue();
  // Forgets the mark of `target` if no expired write in it is newer than `rebuilt_at_ms` (the
  // start of the target's last rebuild). Returns whether a mark was removed.
  StatusOr<bool> ClearMark(uint32_t target, uint64_t rebuilt_at_ms);

 private:
  void UpdateProtection() REQUIRES(mu_);

  storage::Storage* storage_;
  const uint64_t grace_ms_;
  std::function<uint64_t()> now_ms_;
  std::atomic<uint64_t> seq_{0};
  std::atomic<uint64_t> pending_{0};
  std::atomic<uint64_t> replayed_{0};
  std::atomic<uint64_t> expired_{0};
  std::atomic<uint64_t> discarded_{0};

  mutable common::Mutex mu_;
  std::map<uint32_t, uint64_t> per_target_ GUARDED_BY(mu_);  // pending hints per target
  std::map<uint32_t, uint64_t> needs_repair_ GUARDED_BY(mu_);
  // Per target with pending hints: at most the write time of its oldest one (a lower bound).
  std::map<uint32_t, uint64_t> oldest_ GUARDED_BY(mu_);  // target -> newest expired write
  std::optional<uint64_t> protection_id_ GUARDED_BY(mu_);
};

}  // namespace shardkv::cluster
