// ChangePlanner: what a membership change moves, counted exactly on the old replicas, and the
// checks that refuse a change before anything is committed (design.md "Rebalancing: the
// transition protocol", the plan).
//
// A plan counts every key of the cluster, so it is made once per change: the plan that `begin`
// commits carries each stream task's counts (ChangeRecord::task_plans), and the driver streams
// with those instead of counting again. A `begin` of the same change at the same epoch within
// kPlanReuse of its `plan` (what `shardkv cluster add-node` does: plan, confirm, begin) reuses
// that plan instead of counting a second time; its counts are then up to kPlanReuse old, which
// only the progress figures see (the streams move whatever the ranges hold when they run).
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

#include "cluster/membership.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/plan.h"
#include "shardkv/admin.h"
#include "shardkv/change.h"
#include "shardkv/cluster_map.h"

namespace shardkv::rebalance {

// A planned change: the map to commit (the pending placement) and the report (the record with
// its plan totals and task plans, per-stream totals and the node shares).
struct ChangePlan {
  ClusterMap target;
  ChangeReport report;
};

class ChangePlanner {
 public:
  static constexpr std::chrono::seconds kPlanReuse{120};

  // REQUIRES: the pointers outlive the object.
  ChangePlanner(uint32_t self_id, std::chrono::milliseconds rpc_timeout, net::PeerPool* peers,
                cluster::Membership* membership);

  // Plans `change` against `map` (this node's newest). InvalidArgument / NotFound /
  // FailedPrecondition for a change that cannot be made; Unavailable when no replica could count
  // a range. `reuse`: a plan of the same change at the same epoch made within kPlanReuse may be
  // returned instead of counting again (for begin).
  StatusOr<ChangePlan> Plan(const ClusterMap& map, const ChangeRequest& change,
                            const ChangeThrottle& throttle, bool reuse);
  // Counts planned by Plan() since the start (each one counted every key once).
  uint64_t plans_counted() const;

  // Sum of the client_errors counter over the live members.
  int64_t SumClientErrors(const ClusterMap& map);

  // With the map consensus the leader may plan its own removal: a begin hands leadership on
  // before it commits (ChangeFrontend). Call before use.
  void AllowSelfRemoval() { allow_self_removal_ = true; }

 private:
  struct Cached {
    uint64_t cluster_id = 0;
    uint64_t epoch = 0;
    ChangeRequest change;
    std::chrono::steady_clock::time_point made;
    ChangePlan plan;
  };

  StatusOr<ChangePlan> Count(const ClusterMap& map, const ChangeRequest& change);
  Status CheckJoiningNode(const ClusterMap& map, uint32_t node_id, const std::string& address);
  // An unformed joining node must be the node id being added (its stats say which it is).
  Status CheckUnformedNodeId(uint32_t node_id, const std::string& address);
  StatusOr<std::vector<net::RangeCount>> CountRanges(const ClusterMap& map,
                                                     const std::vector<MovingRange>& ranges);

  const uint32_t self_id_;
  bool allow_self_removal_ = false;
  const std::chrono::milliseconds rpc_timeout_;
  net::PeerPool* peers_;
  cluster::Membership* membership_;

  mutable common::Mutex mu_;
  std::optional<Cached> cached_ GUARDED_BY(mu_);
  uint64_t plans_counted_ GUARDED_BY(mu_) = 0;
};

}  // namespace shardkv::rebalance
