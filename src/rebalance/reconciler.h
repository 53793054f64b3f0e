// Reconciler: the local data rules a node applies as its cluster map changes (design.md
// "Rebalancing: the transition protocol"). Installed as MapStore hooks, so every install path
// (admin, gossip, a reply carrying a map, startup) follows them.
//
// - Before a map that starts a new change is published, the node drops whatever it holds in the
//   ranges it is a destination for: leftovers of an earlier, cancelled attempt. Doing it before
//   publishing means no joint write of the new change can land first (a request carrying the
//   newer epoch waits for this install; see KvService).
// - After a map is published, ranges the node held (or was pending for) under the old map and
//   holds under neither placement of the new one are dropped with DeleteRange. That is the
//   cleanup once a change is committed (the old replicas' lost ranges), the destinations'
//   partial data after a cancel, and a stale node's ranges when it catches up late. It is
//   idempotent and recorded: `rebalance/cleaned/<epoch>` in meta lists what was dropped.
//
// Thread-safety: called with the MapStore lock held, one install at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <thread>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

class Reconciler {
 public:
  Reconciler(uint32_t self_id, storage::Storage* storage) : self_id_(self_id), storage_(storage) {}
  ~Reconciler();  // Stop()s

  // Dropped ranges are compacted in the background (DeleteRange only writes range tombstones:
  // the space, and the key estimates `cluster status` shows, come back with compaction).
  void Start();
  void Stop();  // joins; REQUIRES: before the storage closes

  // Registers the hooks. REQUIRES: the Reconciler outlives every install on `maps`.
  void Attach(cluster::MapStore* maps);

  uint64_t ranges_dropped() const { return ranges_dropped_.load(); }

 private:
  Status BeforePublish(const ClusterMap* old, const ClusterMap& next);
  void AfterPublish(const ClusterMap* old, const ClusterMap& next);

  void CompactLoop();

  const uint32_t self_id_;
  storage::Storage* storage_;
  std::atomic<uint64_t> ranges_dropped_{0};
  common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<TokenRange> to_compact_ GUARDED_BY(mu_);
  std::thread compactor_;
};

}  // namespace shardkv::rebalance
