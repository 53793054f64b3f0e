// RepairState: the needs-repair serving rules (design.md "Needs repair").
//
// A node whose hints expired on some other node (HintStore marks it: those writes, deletes
// included, will never reach it, and their tombstones may already be collected elsewhere) must
// not serve its old values: not as a replica of a read (a quorum read would merge a value whose
// delete is gone, and read repair would spread it) and not as a stream source (a new owner would
// copy it). Until it is rebuilt (`--rebuild`) it refuses both with "node N needs repair: ...;
// rebuild it with `shardkv cluster start-node N --rebuild`". Writes still reach it: they are
// newer than anything it lost.
//
// How the marked node learns it: every node publishes its HintStore marks (target and the newest
// expired write's time) in its stats reply (info `repair_marks`) and its last rebuild's start
// (counter `rebuilt_at_ms`). RepairState polls every peer's stats (once before the node serves,
// then every poll_interval), so a marked node finds its own id there and persists the mark in
// its meta column family (`cluster/needs_repair_self`): it stays marked across restarts, even if
// the marking node is gone. A mark whose write time is not after the target's last rebuild is
// stale (the rebuild pulled that write from the other replicas): the target ignores it, and the
// marking node deletes it once it sees the target's `rebuilt_at_ms`.
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
};

class RepairState {
 public:
  // REQUIRES: the pointers outlive the object (Stop() first).
  RepairState(RepairStateOptions options, storage::Storage* storage, MapStore* maps,
              net::PeerPool* peers, HintStore* hints);
  ~RepairState();

  // Reads this node's own mark and last rebuild from meta (call once after open).
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

  // A rebuild that started at `started_ms` (wall clock) completed: clears the own mark and
  // records the time, which retires every mark of writes older than it.
  [[nodiscard]] Status RecordRebuild(uint64_t started_ms);
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
  };

  void Loop();
  void NoteReport(uint32_t peer, const net::StatsResponse& reported);
  // Persists the own mark (marker's expired write at mark_ms) unless it is already marked.
  void MarkSelf(uint32_t marker, uint64_t mark_ms) REQUIRES(mu_);
  // The mark that holds against `id`: marker id, or 0 for none.
  uint32_t MarkerOf(uint32_t id) const REQUIRES(mu_);

  const RepairStateOptions options_;
  storage::Storage* storage_;
  MapStore* maps_;
  net::PeerPool* peers_;
  HintStore* hints_;

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t rebuilt_at_ms_ GUARDED_BY(mu_) = 0;
  std::string self_reason_ GUARDED_BY(mu_);  // empty: not marked
  std::map<uint32_t, PeerReport> reports_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace shardkv::cluster
