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
// task count; tasks group the moving ranges by (destination, sources) (plan.h). Each destination
// keeps the change's rate with one limiter for all its streams (StreamSink).
//
// The parts, each in its own file pair:
//   ChangeFrontend  the typed commands (net::AdminRequest: plan, begin, status, cancel, resume,
//                   throttle), answered with a ChangeReport; it commits but drives nothing;
//   ChangePlanner   the plan: checks and exact counts, made once per change;
//   ChangeDriver    the backend: takeover, streams, the stage commits;
//   MapCommitter    the commit protocol (cluster/map_committer.h), shared by the two above.
// Rebalancer owns them and is what the node sees.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "cluster/map_committer.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/change_driver.h"
#include "rebalance/change_frontend.h"
#include "rebalance/change_planner.h"

namespace shardkv::rebalance {

class Rebalancer {
 public:
  using Reply = ChangeFrontend::Reply;

  // REQUIRES: the pointers outlive the object (Stop() first).
  Rebalancer(RebalancerOptions options, cluster::MapStore* maps, net::PeerPool* peers,
             cluster::Membership* membership);
  ~Rebalancer();

  void Start();
  void Stop();
  // Before a graceful stop, while consensus still runs: see ChangeDriver::HandOff.
  Status HandOff() { return driver_.HandOff(); }

  void HandleAdmin(net::AdminRequest request, Reply done);
  void AddCounters(std::map<std::string, int64_t>* counters) const;

 private:
  cluster::MapCommitter committer_;
  ChangePlanner planner_;
  ChangeDriver driver_;
  ChangeFrontend frontend_;
};

}  // namespace shardkv::rebalance
