// Rebalancer: plans, commits and drives membership changes (design.md "Rebalancing: the
// transition protocol"). Every node runs one; the claimant (the node the admin tool talked to)
// drives the change, and if it dies the live member with the lowest id takes over by committing
// the next epoch with itself as claimant. A takeover resumes the streams from their checkpoints
// at most once: if a second driver dies while streaming, the takeover commits `failed` with the
// reason instead (whatever killed two drivers would likely kill a third); `resume` resets it.
// An error or exception inside a drive fails the change (state failed, reason in the record); it
// never ends the process.
//
// Stage machine, persisted in the map (stage + ChangeRecord in the change detail):
//   begin      -> commit e+1: pending placement, joint writes, state streaming
//   streaming  -> every stream task done (checkpointed at the destinations) -> commit e+2 read_new
//   read_new   -> every live member acknowledged e+2 -> commit e+3 new_only
//   new_only   -> every live member acknowledged e+3 -> commit e+4: pending becomes current,
//                 state done; installing it makes the old replicas drop what they lost (cleanup)
//   failed     -> a task kept failing, the drive hit an error, or a second driver died while
//                 streaming; joint writes stay on; `resume` goes back to streaming
//   cancel     -> only in streaming/failed: commit the old placement, state cancelled
// A commit is a compare-and-set on the epoch, sent to every live member; the next stage starts
// only once all of them acknowledged (each after its epoch barrier). Its outcome is never
// ambiguous to the caller: OK means it took effect; an error means nothing did, except a
// Timeout whose message says "outcome unknown" (some members accepted it, others could not be
// told). Before proposing, the committer pulls the newest map, so a stale node does not propose
// an epoch the cluster has passed; a committer absent from the map it commits (the joining node
// cancelling its own add) installs it as a departing node.
//
// Streams run on a fixed pool of at most kMaxStreamWorkers threads (schedule.h), whatever the
// task count; tasks group the moving ranges by (destination, sources) (plan.h).
//
// Admin commands (net::AdminRequest): plan, begin, status, cancel, resume, throttle. Replies
// carry an encoded RebalanceReport.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/map_committer.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "clustermap/change_record.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/plan.h"

namespace shardkv::rebalance {

struct RebalancerOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds tick{100};
  std::chrono::milliseconds rpc_timeout{5000};
  // A task failing this long without progress fails the change (state failed).
  std::chrono::milliseconds task_failure_timeout{30000};
  uint32_t slice_ms = 500;
};

class Rebalancer {
 public:
  using Reply = std::function<void(net::ResponseBody)>;

  // REQUIRES: the pointers outlive the object (Stop() first).
  Rebalancer(RebalancerOptions options, MapStore* maps, PeerPool* peers, Membership* membership);
  ~Rebalancer();

  void Start();
  void Stop();

  void HandleAdmin(net::AdminRequest request, Reply done);
  void AddCounters(std::map<std::string, int64_t>* counters) const;

 private:
  struct TaskState {
    StreamTask task;
    uint64_t planned_copies = 0;
    uint64_t planned_bytes = 0;
    uint64_t rate = 0;  // bytes/s, set when scheduled
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

  net::ResponseBody Admin(const net::AdminRequest& request);
  StatusOr<RebalanceReport> PlanChange(const std::map<std::string, std::string>& args,
                                       ClusterMap* target);
  RebalanceReport Report();
  // Commits `make`'s map at the next epoch (MapCommitter::Commit, cluster/map_committer.h).
  ::shardkv::Status Commit(const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make) {
    return committer_.Commit(make);
  }
  // Commits state failed for change `change_id` with `reason` (and the moved counts so far).
  void FailChange(uint64_t change_id, const std::string& reason, uint32_t failed_driver);
  // Adds the tasks' progress to the record's moved counts.
  void FillMovedLocked(ChangeRecord* rec) const REQUIRES(mu_);
  ::shardkv::Status CheckJoiningNode(const ClusterMap& map, uint32_t node_id,
                                     const std::string& address);

  void AdminLoop();
  void DriveLoop();
  void DriveOnce();
  bool IsDriver(const ClusterMap& map) const;
  ::shardkv::Status RunStreams(const ClusterMap& map, const ChangeRecord& record);
  void RunTask(size_t index, const ClusterMap& map, uint64_t change_id, uint32_t merge_count);
  void StreamWorker();
  StatusOr<std::vector<net::RangeCount>> CountRanges(const ClusterMap& map,
                                                     const std::vector<MovingRange>& ranges);
  int64_t SumClientErrors(const ClusterMap& map);
  bool ChangeStillRunning(uint64_t change_id) const;

  const RebalancerOptions options_;
  MapStore* maps_;
  PeerPool* peers_;
  Membership* membership_;

  MapCommitter committer_;

  mutable Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopping_tasks_ GUARDED_BY(mu_) = false;  // RunStreams is winding down
  uint64_t active_change_ GUARDED_BY(mu_) = 0;   // the change RunStreams works on
  std::vector<TaskState> tasks_ GUARDED_BY(mu_);
  std::string phase_ GUARDED_BY(mu_);  // cleanup while committing the end
  std::chrono::steady_clock::time_point streams_started_ GUARDED_BY(mu_);
  std::deque<std::pair<net::AdminRequest, Reply>> admin_queue_ GUARDED_BY(mu_);
  bool tasks_changed_ GUARDED_BY(mu_) = false;  // a task finished a call; schedule again
  std::deque<std::function<void()>> ready_ GUARDED_BY(mu_);  // scheduled tasks for the workers
  std::condition_variable task_wake_;                        // ready_ or stopping_tasks_ changed
  std::string fatal_error_ GUARDED_BY(mu_);  // a worker hit an exception; fails the change
  std::vector<std::thread> admin_threads_;
  std::thread drive_thread_;
  std::atomic<uint64_t> task_errors_{0};
};

}  // namespace shardkv::rebalance
