// MapCommitter: the proposer side of the map commit protocol, next to its acceptor
// (Membership::Install). A commit is a compare-and-set of the next epoch on every member of the
// next map (design.md "Rebalancing: the transition protocol"):
//  - OK: it took effect, and every live member acknowledged it (each after its epoch barrier),
//    or, after 60 s of re-sending, it is installed here and the rest will pull it by gossip;
//  - an error: nothing took effect (a refusal by every member that answered), except
//  - Timeout whose message says "outcome unknown": some members accepted it and others refused.
// Before proposing it works on the newest map it can pull, so a stale node does not propose an
// epoch the cluster has passed; when every refusal says its epoch is behind, it pulls the newest
// map and decides once more. A committer absent from the map it commits (the joining node
// cancelling its own add) installs it as a departing node and names the lowest remaining member
// as claimant.
//
// Thread-safety: thread-safe; one commit runs at a time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>

#include "cluster/map_consensus.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "common/mutex.h"
#include "net/peer_pool.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::cluster {

class MapCommitter {
 public:
  // REQUIRES: the pointers outlive the object. `consensus` null: the compare-and-set protocol
  // above; else commits go through Raft (CommitByConsensus, design.md "Consensus").
  MapCommitter(uint32_t self_id, std::chrono::milliseconds rpc_timeout, MapStore* maps,
               net::PeerPool* peers, Membership* membership, MapConsensus* consensus = nullptr);

  MapConsensus* consensus() const { return consensus_; }
  // How many voters this node heard from within the lease (self included), and how many there
  // are; used for "no majority: X of N voters reachable".
  void CountReachableVoters(size_t* reachable, size_t* voters) const;
  // Unavailable "no majority: X of N voters reachable" when this side cannot decide, else OK.
  Status CheckMajority() const;

  // Whether a consensus commit waits for every member's acknowledgement (the stage rule) before
  // it returns. Only a change that moves no stage and no placement may skip it: the hand-off mark
  // at a graceful stop, which the next leader reads from the Raft log and which must not hold
  // the stop up for the 60 s the wait may last.
  enum class Acks { kAwait, kSkip };
  // Runs `make` on the current map and commits its result at the next epoch (see above).
  Status Commit(const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make,
                Acks acks = Acks::kAwait);
  // Ends the wait for acknowledgements of a commit in flight (it returns OK: it took effect);
  // commits after Stop() do not wait for acknowledgements either. Idempotent.
  void Stop();
  uint64_t commits() const { return commits_.load(); }

 private:
  // One proposal; *stale is set when every refusal said our epoch is behind (nothing took
  // effect; pull the newest map and try again).
  Status InstallEverywhere(const ClusterMap& current, const ClusterMap& next, bool* stale);
  // The leader proposes through Raft, then pushes the committed map to every member and waits
  // for each one's acknowledgement (or its silence for longer than the lease).
  Status CommitByConsensus(const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make,
                           Acks acks);
  Status AwaitAcknowledgements(const ClusterMap& current, const ClusterMap& next);

  const uint32_t self_id_;
  const std::chrono::milliseconds rpc_timeout_;
  MapStore* maps_;
  net::PeerPool* peers_;
  Membership* membership_;
  MapConsensus* consensus_;

  common::Mutex commit_mu_;  // one commit at a time
  common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> commits_{0};
};

}  // namespace shardkv::cluster
