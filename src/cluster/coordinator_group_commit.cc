// Coordinator::WriteMany's group commit (design.md "Group commit").
//
// Why: a client's write costs RocksDB a write-group entry, a WAL append (a write() system call)
// and a read of the key, and costs every peer a frame and its reply, whatever the write's size.
// With many clients writing a key each, those fixed costs were most of a write's cost. So a
// batch is queued, and the queue is written as one batch after the handlers that the event loop
// has ready now (common/loop_turn.h): one epoll wakeup that made many connections readable
// yields one storage batch and one frame per peer for all of their writes. Batches that arrive
// while a thread writes the queue join its next round. No thread waits for another and no timer
// delays a write.
//
// A queued batch counts as in flight under its map's epoch from the moment it is queued, so the
// epoch barrier (WaitForOlderEpochs) waits for it as for a write already sent.
#include <utility>

#include "cluster/coordinator.h"
#include "common/loop_turn.h"

namespace shardkv::cluster {

void Coordinator::WriteMany(std::shared_ptr<const ClusterMap> map, std::vector<BatchWrite> writes,
                            net::Consistency consistency) {
  if (writes.empty()) return;
  BeginOp(map->epoch());
  {
    common::MutexLock lock(&pending_mu_);
    pending_.push_back(PendingBatch{std::move(map), consistency, std::move(writes)});
    if (draining_) return;  // the draining thread takes it in its next round
    draining_ = true;
  }
  if (!common::LoopTurn::Later([self = shared_from_this()] { self->DrainPending(); })) {
    DrainPending();  // not on an event loop: nothing else is about to run here
  }
}

void Coordinator::DrainPending() {
  for (;;) {
    std::vector<PendingBatch> round;
    {
      common::MutexLock lock(&pending_mu_);
      if (pending_.empty()) {
        draining_ = false;
        return;
      }
      round.swap(pending_);
    }
    // One batch per (map, consistency): a batch is written under one map and one quorum rule.
    // Almost always there is one group; the writes keep their arrival order within it.
    std::vector<PendingBatch> groups;
    std::vector<size_t> merged;  // per group: how many queued batches it holds
    for (PendingBatch& b : round) {
      size_t g = 0;
      while (g < groups.size() &&
             !(groups[g].map == b.map && groups[g].consistency == b.consistency)) {
        ++g;
      }
      if (g == groups.size()) {
        groups.push_back(std::move(b));
        merged.push_back(1);
        continue;
      }
      for (BatchWrite& w : b.writes) groups[g].writes.push_back(std::move(w));
      ++merged[g];
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      const uint64_t epoch = groups[g].map->epoch();
      WriteBatchNow(std::move(groups[g].map), std::move(groups[g].writes), groups[g].consistency);
      // Each write now counts itself (PrepareWrite); the queued batches no longer need to.
      for (size_t i = 0; i < merged[g]; ++i) EndOp(epoch);
    }
  }
}

}  // namespace shardkv::cluster
