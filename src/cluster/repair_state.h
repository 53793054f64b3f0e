// RepairState: the needs-repair serving rules (design.md "Needs repair").
//
// A node whose hints expired on some other node (HintStore marks it: those writes, deletes
// included, will never reach it, and their tombstones may already be collected elsewhere) must
// not serve its old values: not as a replica of a read (a quorum read would merge a value whose
// delete is gone, and read repair would spread it) and not as a stream source (a new owner would
// copy it). Until it is repaired (`shardkv repair`: RepairService compares every range it holds
// with the other replicas, then calls RecordRepair) or rebuilt (`--rebuild`, RecordRebuild) it
// refuses both with "node N needs repair: ...; bring it back with `shardkv repair --node N` ...".
// Writes still reach it: they are newer than anything it lost.
//
// How the marked node learns it: every node publishes its HintStore marks (target and the newest
// expired write's time) in its stats reply (info `repair_marks`) and its last rebuild's start
// (counter `rebuilt_at_ms`). RepairState polls every peer's stats (once before the node serves,
// then every poll_interval), so a marked node finds its own id there and persists the mark in
// its meta column family (`cluster/needs_repair_self`): it stays marked across restarts, even if
// the marking node is gone. A mark whose write time is not after the target's last rebuild is
// stale (the rebuild pulled that write from the other replicas): the target ignores it, and the
// marking node deletes it once it sees the target's `rebuilt_at_ms`. A repair of all its ranges
// records its start there the same way (RecordRepair): it pulled every older write too.
//
// Whether a repair may bring it back (PurgeRefusal): every node publishes whether its tombstone
// GC waits for a repair with every replica (counter `gc_waits_for_repair`) and since when
// (`gc_waits_since_ms`, kept in meta `cluster/gc_waits_since_ms`: 0 for a database created so, else
// the start that turned it on, e.g. the first start after an upgrade); a replica that collected
// by the grace alone after this node's last sync of a range may have purged a tombstone it lacks
// (design.md "Needs repair", the rule).
//
// Coordinators use the same view: a replica marked by this node or by any peer it polled (and not
// rebuilt since) is not asked for reads and counts as a failed replica (ReadRefusal), so a
// coordinator does not depend on the marked node having learned it yet.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "storage/storage.h"

namespace shardkv::cluster {

struct RepairStateOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds call_timeout{500};
  // This node's tombstone GC waits for a repair with every replica (the GC rule; published).
  bool gc_waits_for_repair = true;
  // The database did not exist before this start (so its GC always waited, if it waits now).
  // False for a rebuild: its data came from other replicas, whatever they had collected.
  bool fresh_database = false;
  // This start rebuilds the node (`--rebuild`, in place or into a new directory): its data now
  // comes from the other replicas, whatever they had collected by the grace alone, so its GC
  // counts as waiting only since now (whatever an earlier start recorded).
  bool rebuild = false;
  uint64_t tombstone_grace_ms = 0;
  std::function<uint64_t()> wall_ms;  // Unix ms (null: the system clock)
};

class RepairState {
 public:
  // REQUIRES: the pointers outlive the object (Stop() first).
  RepairState(RepairStateOptions options, storage::Storage* storage, MapStore* maps,
              net::PeerPool* peers, HintStore* hints);
  ~RepairState();

  // Reads this node's own mark and last rebuild from meta, and records since when its GC waits
  // for repairs (call once after open).
  [[nodiscard]] Status Load();
  // Marks the targets of this node's overdue hints (HintStore::MarkOverdue), then polls every
  // peer of the current map once, in parallel, and waits up to `timeout` for their answers.
  // Returns how many peers did not answer in time (0: this node's view of the marks is fresh).
  // REQUIRES: not on a network thread.
  size_t PollPeers(std::chrono::milliseconds timeout);
  void Start();  // the poll thread
  void Stop();   // idempotent

  // Non-empty while this node needs repair: why (without the "node N needs repair" prefix).
  std::string SelfReason() const;
  // OK, or FailedPrecondition naming the reason and the fix, for refusing `what` ("replica
  // reads", "to be a stream source").
  Status Refusal(std::string_view what) const;
  // OK, or why node `id` must not be counted as a replica of a read (it needs repair, by its
  // own mark or by a mark of this node or a peer that it has not been rebuilt since).
  Status ReadRefusal(uint32_t id) const;

  // OK if a repair of this node (while it needs repair) may merge a range with replica `peer`,
  // this node holding every write of the range older than `synced_ms` (its GC horizon there):
  // `peer` keeps every tombstone this node may lack, because its GC has waited for repairs with
  // every replica, this node included, since before anything newer than `synced_ms` could pass
  // the grace. Otherwise FailedPrecondition (reason kRefusedByPolicy) saying to rebuild: `peer`
  // collects, or collected, tombstones by the grace alone, and the writes this node missed are
  // past the grace (their hints expired); or Unavailable if `peer` has not answered a poll.
  Status PurgeRefusal(uint32_t peer, uint64_t synced_ms) const;

  // A rebuild that started at `started_ms` (wall clock) completed: clears the own mark and
  // records the time, which retires every mark of writes older than it.
  [[nodiscard]] Status RecordRebuild(uint64_t started_ms);
  // A repair compared every range this node holds with all their other replicas, the first of
  // them starting at `started_ms`: as RecordRebuild (each comparison pulled every write older
  // than its start), but never lowers the recorded time.
  [[nodiscard]] Status RecordRepair(uint64_t started_ms);
  uint64_t rebuilt_at_ms() const;

  // Stats: counters needs_repair (0/1) and rebuilt_at_ms; info needs_repair_reason and
  // repair_marks ("3:1733150000000,5:..."), each only when non-empty.
  void AddStats(net::StatsResponse* out) const;

  // Encodes / parses a `repair_marks` value (exposed for the CLI's and tests' use of the format).
  static std::string EncodeMarks(const std::map<uint32_t, uint64_t>& marks);
  static std::map<uint32_t, uint64_t> ParseMarks(std::string_view text);

 private:
  // What one peer reported last.
  struct PeerReport {
    std::map<uint32_t, uint64_t> marks;
    uint64_t rebuilt_at_ms = 0;
    bool gc_waits = false;  // absent (an earlier release): collects by the grace alone
    uint64_t gc_waits_since_ms = UINT64_MAX;  // absent: not known to have ever waited
  };

  void Loop();
  void NoteReport(uint32_t peer, const net::StatsResponse& reported);
  // Persists the own mark (marker's expired write at mark_ms) unless it is already marked.
  void MarkSelf(uint32_t marker, uint64_t mark_ms) REQUIRES(mu_);
  // Persists `at_ms` as the last rebuild or repair and clears the own mark.
  Status Clear(uint64_t at_ms, std::string_view how) REQUIRES(mu_);
  // The mark that holds against `id`: marker id, or 0 for none.
  uint32_t MarkerOf(uint32_t id) const REQUIRES(mu_);

  const RepairStateOptions options_;
  uint64_t gc_waits_since_ms_ = 0;  // set by Load
  storage::Storage* storage_;
  MapStore* maps_;
  net::PeerPool* peers_;
  HintStore* hints_;

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t rebuilt_at_ms_ GUARDED_BY(mu_) = 0;
  std::string self_reason_ GUARDED_BY(mu_);  // empty: not marked
  // The newest write time of the marks of this node seen since its last rebuild or repair.
  uint64_t self_mark_ms_ GUARDED_BY(mu_) = 0;
  std::map<uint32_t, PeerReport> reports_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shardkv::cluster
