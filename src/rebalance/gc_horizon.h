// GcHorizon: the tombstone GC rule of anti-entropy (design.md "Tombstones and GC"). A tombstone
// may be collected only once it is older than the grace AND every replica of its range has been
// repaired since it was written: otherwise a replica that missed the delete still holds the
// older value, and the next repair (or a quorum read) would bring it back once the others have
// collected the tombstone.
//
// Per range this node holds (AllRanges of its map: ring arcs or jump shards), the horizon is the
// start of the last repair of exactly that range, or of a range containing it, that compared it
// with every replica of its set and in which no replica failed, less the largest clock offset
// (a tombstone is stamped by its coordinator's HLC, which may run that far ahead of the comparing
// node's clock). Storage collects a record past the grace only below its token's horizon
// (Storage::SetRepairHorizons).
//
// - Recorded by the comparing node (RepairService) and, through the release of its tree session
//   (TreeQuery::repaired_ms), by every other replica; each keeps its own in `meta` under
//   `repair/horizon/<first, 16 hex digits>` = "<last> <horizon ms> <ids,>", written unsynced:
//   a lost record only makes GC wait for the next repair.
// - A horizon is tied to a replica set: a range whose set changed (a join, a remove-node, a
//   moved range) has none until it is repaired against the new set, and a range this node is
//   only a pending destination of has none at all. So a range moved here collects nothing before
//   its first repair, and `remove-node` of a replica that stays down unblocks GC: the next repair
//   compares the range against the remaining replicas.
// - A range with one replica (RF=1) has nothing to compare: the grace alone decides.
// - A range not repaired with every replica for a whole grace is "blocked" (Blocked): shown by
//   `stats` (gc_blocked_ranges, gc_blocked_by: the replicas down or needing repair) and
//   `cluster status`, so GC is never held back silently.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "shardkv/cluster_map.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

class GcHorizon {
 public:
  static constexpr std::string_view kMetaPrefix = "repair/horizon/";

  // `wall_ms`: Unix ms (when a range began to be held here, for Blocked).
  GcHorizon(uint32_t self_id, storage::Storage* storage, std::function<uint64_t()> wall_ms);

  // Reads the records (call once, before Refresh).
  [[nodiscard]] Status Load();
  // Recomputes the horizons of the ranges `map` gives this node and hands them to storage;
  // forgets the records no range uses any more. Call on every new map (null: none held).
  void Refresh(const ClusterMap* map);

  // At a map publish (MapStore's after-publish hook, which runs under the store's install lock,
  // where a Refresh of a large ring held up every install for a second): cheap. Storage keeps no
  // horizon (nothing past the grace is collected) and Record ignores repairs until the refresher
  // has run Refresh for the new map.
  void Invalidate();
  // A thread that runs Refresh(current()) after each Invalidate. StopRefresher joins it; call it
  // before whatever `current` reads is destroyed (the destructor calls it too).
  void StartRefresher(std::function<std::shared_ptr<const ClusterMap>()> current);
  void StopRefresher();
  ~GcHorizon();

  // A repair of `range` compared it with every one of `replicas` and none failed; `horizon_ms`
  // is its start less the clock offset. Kept (never lowering a horizon) if `range` is, under the
  // current map, a range this node holds with that replica set, or lies inside one.
  void Record(const TokenRange& range, std::vector<uint32_t> replicas, uint64_t horizon_ms);

  struct Blocked {
    size_t ranges = 0;                  // ranges without a full repair for longer than the grace
    std::vector<uint32_t> waiting_for;  // their other replicas that are down or need repair
  };
  // `replica_ok(id)`: whether a repair could compare replica `id` now.
  Blocked Blocking(uint64_t now_ms, uint64_t grace_ms,
                   const std::function<bool(uint32_t)>& replica_ok) const;

  // The horizon of the range holding `token` (0: none; UINT64_MAX: one replica): for tests, logs,
  // and a catch-up's rule (this node has every write older than it: repair_service.h).
  uint64_t HorizonOf(uint64_t token) const;

 private:
  struct Saved {
    uint64_t last = 0;
    uint64_t horizon_ms = 0;
    std::vector<uint32_t> replicas;  // sorted
  };
  struct Held {
    TokenRange range;
    std::vector<uint32_t> replicas;  // sorted
    uint64_t horizon_ms = 0;         // UINT64_MAX: one replica, the grace alone decides
    uint64_t since_ms = 0;           // when this node began to hold it with this set
  };

  // The record whose range contains `range`, with the same set (end(): none).
  std::map<uint64_t, Saved>::const_iterator Containing(const TokenRange& range,
                                                       const std::vector<uint32_t>& replicas) const
      REQUIRES(mu_);
  void Publish() REQUIRES(mu_);
  void RefreshLoop();

  const uint32_t self_;
  storage::Storage* storage_;
  const std::function<uint64_t()> wall_ms_;
  mutable common::Mutex mu_;
  std::map<uint64_t, Saved> records_ GUARDED_BY(mu_);  // by first token
  std::vector<Held> held_ GUARDED_BY(mu_);             // in token order
  // Bumped by Invalidate; held_ was computed for `refreshed_`: they differ while a new map's
  // Refresh is pending, and then Record and Publish do nothing.
  std::atomic<uint64_t> generation_{0};
  uint64_t refreshed_ GUARDED_BY(mu_) = 0;

  common::Mutex refresh_mu_;
  std::condition_variable refresh_cv_;
  bool refresh_stop_ GUARDED_BY(refresh_mu_) = false;
  uint64_t refresh_wanted_ GUARDED_BY(refresh_mu_) = 0;  // the newest Invalidate's generation
  std::function<std::shared_ptr<const ClusterMap>()> current_;  // set before refresher_ starts
  std::thread refresher_;
};

}  // namespace shardkv::rebalance
