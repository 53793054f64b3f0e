// ChangeDriver: the backend of a membership change. It moves the change through its stages once
// it is committed (rebalancer.h has the stage machine): takes over from a dead claimant, runs the
// stream tasks on a fixed worker pool, and commits each next stage. It accepts no commands; the
// frontend (ChangeFrontend) commits those and wakes it.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/map_committer.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "common/mutex.h"
#include "net/peer_pool.h"
#include "rebalance/change_planner.h"
#include "rebalance/plan.h"
#include "shardkv/change.h"

namespace shardkv::rebalance {

struct RebalancerOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds tick{100};
  std::chrono::milliseconds rpc_timeout{5000};
  // A task failing this long without progress fails the change (state failed).
  std::chrono::milliseconds task_failure_timeout{30000};
  uint32_t slice_ms = 500;
  // The map consensus (null: the compare-and-set commits; the claimant drives). With it, the
  // Raft leader drives changes and follower nodes forward commands to it.
  cluster::MapConsensus* consensus = nullptr;
  // Non-OK for an old replica that must not be a stream source (it needs repair:
  // RepairState::ReadRefusal). The driver gives it no address in a task, so the destination
  // merges from the others instead, also before that node has learned that it needs repair
  // (the drivers that marked it know first).
  std::function<Status(uint32_t node_id)> source_refusal;
};

class ChangeDriver {
 public:
  // REQUIRES: the pointers outlive the object (Stop() first).
  ChangeDriver(RebalancerOptions options, cluster::MapStore* maps, net::PeerPool* peers,
               cluster::Membership* membership, cluster::MapCommitter* committer,
               ChangePlanner* planner);
  ~ChangeDriver();

  void Start();
  void Stop();
  // A command changed the change (begin, cancel, throttle, resume): look at it now.
  void Wake();
  // Before a graceful stop: if this node drives a streaming change, marks it handed on
  // (ChangeRecord::handed_off_by) so that the next leader's takeover is not counted as a death.
  // OK when there is nothing to hand on. Bounded by the propose timeout: the mark is committed
  // without waiting for the members' acknowledgements (MapCommitter::Acks::kSkip).
  Status HandOff();

  // The moved counts so far of change `change_id` into `rec` (when this node drives it).
  void FillMoved(ChangeRecord* rec) const;
  // The live state of the report: per-stream progress while this node streams the change, the
  // state while it commits the end (cleanup), else the record's counts.
  void AddProgress(ChangeReport* report) const;
  uint64_t task_errors() const { return task_errors_.load(); }

 private:
  struct TaskState {
    StreamTask task;
    uint64_t planned_copies = 0;
    uint64_t planned_bytes = 0;
    bool running = false;
    bool done = false;
    bool resumed = false;  // its destination had a checkpoint when this driver first asked
    bool had_error = false;
    uint64_t calls = 0;
    uint64_t copies = 0, tombstones = 0, bytes = 0;
    uint64_t ranges_done = 0, copies_during_change = 0;
    uint64_t resumed_copies = 0;  // what its checkpoint already had when this driver first asked
    std::chrono::steady_clock::time_point failing_since{};
    std::chrono::steady_clock::time_point retry_after{};
    std::string last_error;
  };

  Status Commit(const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make,
                cluster::MapCommitter::Acks acks = cluster::MapCommitter::Acks::kAwait) {
    return committer_->Commit(make, acks);
  }
  // Commits state failed for change `change_id` with `reason` (and the moved counts so far).
  void FailChange(uint64_t change_id, const std::string& reason, uint32_t failed_driver);
  void FillMovedLocked(ChangeRecord* rec) const REQUIRES(mu_);

  void DriveLoop();
  void DriveOnce();
  void TakeOver(const ClusterMap& map, const ChangeRecord& rec);
  // True if node `id` of `map` answers a ping (bounded: 1.5 s).
  bool Answers(const ClusterMap& map, uint32_t id);
  bool IsDriver(const ClusterMap& map) const;
  // change_driver_streams.cc
  Status RunStreams(const ClusterMap& map, const ChangeRecord& record);
  void RunTask(size_t index, const ClusterMap& map, uint64_t change_id, uint32_t merge_count);
  void StreamWorker();

  const RebalancerOptions options_;
  cluster::MapStore* maps_;
  net::PeerPool* peers_;
  cluster::Membership* membership_;
  cluster::MapCommitter* committer_;
  ChangePlanner* planner_;

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopping_tasks_ GUARDED_BY(mu_) = false;  // RunStreams is winding down
  uint64_t active_change_ GUARDED_BY(mu_) = 0;   // the change RunStreams works on
  std::vector<TaskState> tasks_ GUARDED_BY(mu_);
  // Set while this driver commits the end of a new_only change: the old replicas drop what they
  // lost as they install it, and `status` says kCleanup meanwhile (no other state is local).
  std::optional<ChangeState> committing_ GUARDED_BY(mu_);
  bool tasks_changed_ GUARDED_BY(mu_) = false;  // a task finished a call; schedule again
  std::deque<std::function<void()>> ready_ GUARDED_BY(mu_);  // scheduled tasks for the workers
  std::condition_variable task_wake_;                        // ready_ or stopping_tasks_ changed
  std::string fatal_error_ GUARDED_BY(mu_);  // a worker hit an exception; fails the change
  std::thread drive_thread_;
  std::atomic<uint64_t> task_errors_{0};
};

}  // namespace shardkv::rebalance
