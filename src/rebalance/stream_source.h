// StreamSource: the old replica's side of a stream (design.md "Rebalancing: the transition
// protocol", streams).
//
// A destination pulls a token range in batches. The first call of a stream takes a RocksDB
// snapshot and later calls read through it, so a stream sees one consistent cut of the range
// while joint writes keep landing (they reach the destination directly). A snapshot older than
// tombstone_grace / 2 is replaced: scanning on from the cursor in a fresh snapshot is still
// complete, and an old snapshot would pin tombstones the GC must be able to drop. Snapshots idle
// for a minute are released (their destination died or the change ended).
//
// Fencing: the source must hold the range (current or pending) under its own map; otherwise
// STALE_EPOCH, so a destination never copies a range from a node that already dropped it.
//
// A node that needs repair (cluster/repair_state.h) is no source: `refusal` answers every scan
// with its FailedPrecondition, so the destination merges from the other old replicas instead of
// copying values whose deletes may be purged elsewhere. (Its own repair comparisons read its
// leaves through a StreamSource without a refusal: RepairService.)
//
// Thread-safety: Scan() may run concurrently on every I/O thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

class StreamSource {
 public:
  // `refusal` (may be empty): non-OK while this node must not be a stream source.
  StreamSource(uint32_t self_id, storage::Storage* storage, cluster::MapStore* maps,
               std::function<Status()> refusal = {})
      : self_id_(self_id), storage_(storage), maps_(maps), refusal_(std::move(refusal)) {}
  ~StreamSource();

  net::ResponseBody Scan(const net::StreamScanRequest& request);
  // Live keys, tombstones and bytes per range (the plan's exact counts).
  net::ResponseBody Count(const net::CountRangesRequest& request);

  // Releases every snapshot (before the storage closes).
  void Close();

 private:
  struct Open {
    std::shared_ptr<storage::StorageSnapshot> snapshot;
    std::chrono::steady_clock::time_point last_used;
  };

  const uint32_t self_id_;
  storage::Storage* storage_;
  cluster::MapStore* maps_;
  const std::function<Status()> refusal_;
  common::Mutex mu_;
  std::map<uint64_t, Open> open_ GUARDED_BY(mu_);  // by stream id
};

}  // namespace shardkv::rebalance
