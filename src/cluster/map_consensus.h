// MapConsensus: the cluster map decided by Raft (design.md "Consensus"). Each committed command
// is an encoded ClusterMap; it is applied only if it is the first map (the anchor) or of the
// same cluster with the applied epoch + 1, so a proposal computed from a stale map is a no-op on
// every replica alike. Applied maps go, in order, to an installer thread that installs each one
// newer than the MapStore's (never on the Raft loop: installs run the reconciler's hooks).
//
// The leader also keeps the Raft configuration in line with the applied map, one change at a
// time, whenever they differ (every tick, so a change that could not be made is tried again): the
// up to five lowest ids of `up` nodes vote, every other member is a standby, departed nodes are
// removed; a leader that would lose its vote first hands leadership on. The steps and their
// preconditions are NextConfigurationStep's (voter_reconciler.h). A change runs in the
// background with a deadline (change_deadline); one that is given up (its server did not catch
// up, or it was not done by then) is logged and reported (Report), its server backs off for
// `backoff` while the other changes go ahead, and a leader whose given-up change left an
// uncommitted configuration hands leadership on, since only another leader can drop it.
//
// Lease fence: a node that has not heard from a Raft leader for `lease` does not coordinate
// client operations (Fence()), unless the other voters could not form a majority without it.
// The leader moves a change to its next stage only once every member acknowledged the map or
// was silent for longer than the lease (MapCommitter), so a lagging node is either current or
// fenced when the next stage starts.
//
// Raft messages travel as the node-only `raftMessage` peer RPC: authenticated and encrypted
// like all node traffic.
//
// Thread-safety: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "consensus/raft_replica.h"
#include "net/peer_pool.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"
#include "storage/storage.h"

namespace shardkv::cluster {

struct MapConsensusOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds heartbeat{100};
  std::chrono::milliseconds election{1000};
  std::chrono::milliseconds lease{2500};
  std::chrono::milliseconds tick{100};
  size_t max_voters = 5;
  // A configuration change not done by then is given up; a server being made a voter that does
  // not catch up within catch_up_timeout too. After a change given up, its server's changes wait
  // `backoff`.
  std::chrono::milliseconds change_deadline{10000};
  std::chrono::milliseconds catch_up_timeout{5000};
  std::chrono::milliseconds backoff{20000};
};

// What this node's consensus says of itself, for its stats (design.md "Consensus").
struct ConsensusReport {
  std::vector<uint32_t> voters;  // of the configuration this node knows
  std::string pending_change;    // the change under way or why none can be made ("": in line)
  std::string given_up;          // the last change given up, how long ago and why ("": none)
  std::string store_error;       // while this node is out of the group after a store error
  uint64_t store_errors = 0;
  uint64_t recoveries = 0;
  uint64_t changes_given_up = 0;
};

// The Raft configuration a map calls for: the up to `max_voters` lowest ids of `up` nodes vote,
// every other member is a standby.
std::vector<consensus::RaftServer> DesiredConfiguration(const ClusterMap& map, size_t max_voters);

class MapConsensus final : public consensus::StateMachine, public consensus::RaftTransport {
 public:
  // REQUIRES: the pointers outlive the object (Stop() first).
  MapConsensus(MapConsensusOptions options, storage::Storage* storage, MapStore* maps,
               net::PeerPool* peers);
  ~MapConsensus() override;
  MapConsensus(const MapConsensus&) = delete;
  MapConsensus& operator=(const MapConsensus&) = delete;

  // After the map is loaded. A formed node starts its replica; one whose data directory has a
  // map and no Raft state (written before consensus) bootstraps the group from its map, unless
  // `may_bootstrap` is false (a rebuild: the group knows it). An unformed node waits for Adopt.
  [[nodiscard]] Status Start(bool may_bootstrap);
  void Stop();  // idempotent
  // The node was adopted into `map`'s cluster: a founding member (epoch 1) bootstraps the group
  // from the map, a joining one starts empty and is added by the leader. No-op when it already
  // runs for that cluster.
  [[nodiscard]] Status Adopt(const ClusterMap& map);
  // A raftMessage from a peer (any thread).
  void Receive(std::string message);

  bool running() const;
  bool IsLeader() const;
  uint32_t LeaderId() const;
  std::string LeaderAddress() const;  // the leader's address in the map ("" if unknown)
  std::vector<uint32_t> Voters() const;
  std::shared_ptr<const ClusterMap> Applied() const;
  // True if a Raft message from `id` arrived within `within` (self: always).
  bool HeardWithin(uint32_t id, std::chrono::milliseconds within) const;
  std::chrono::milliseconds lease() const { return options_.lease; }
  std::chrono::milliseconds election_timeout() const { return options_.election; }

  // Leader only: proposes `next` and waits up to `timeout` for it to be committed and applied
  // here. FailedPrecondition "not the leader"; Aborted "superseded" when another map took the
  // epoch (nothing of ours took effect); Aborted/Timeout otherwise (the outcome is unknown).
  [[nodiscard]] Status Propose(const ClusterMap& next, std::chrono::milliseconds timeout);
  // Hands leadership to another voter and waits for it.
  [[nodiscard]] Status TransferLeadership(std::chrono::milliseconds timeout);
  // True while the replica is in its first lease plus two election timeouts: no leader yet
  // means an election is still due, not that the majority is gone.
  bool Young() const;
  // OK, or Unavailable "fenced: ..." (see above).
  Status Fence() const;
  consensus::RaftStatus status() const;
  // As of the leader loop's last tick (never blocks on the Raft loop).
  ConsensusReport Report() const;

  // consensus::StateMachine (on the Raft loop)
  void Apply(uint64_t index, std::string_view command) override;
  std::string Snapshot() override;
  [[nodiscard]] Status Restore(std::string_view snapshot) override;
  void Reset() override;
  // consensus::RaftTransport (on the Raft loop)
  void Send(uint64_t to, const std::string& address, std::string message) override;

 private:
  [[nodiscard]] Status StartReplica(const ClusterMap* bootstrap_from);
  void StopReplica();
  std::shared_ptr<consensus::RaftReplica> Replica() const;
  void Accept(std::shared_ptr<const ClusterMap> map) REQUIRES(mu_);
  void InstallLoop();
  void LeaderLoop();
  void Reconcile(const consensus::RaftStatus& st, const ClusterMap& applied);
  struct Step;
  void StepDone(uint64_t gen, const Step& step, const Status& s);
  Status ComputeFence() const REQUIRES(mu_);

  const MapConsensusOptions options_;
  storage::Storage* storage_;
  MapStore* maps_;
  net::PeerPool* peers_;

  common::Mutex replica_mu_;  // never held while a replica stops (its loop takes mu_)
  std::shared_ptr<consensus::RaftReplica> replica_ GUARDED_BY(replica_mu_);

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::shared_ptr<const ClusterMap> applied_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<const ClusterMap>> to_install_ GUARDED_BY(mu_);
  std::map<uint32_t, std::chrono::steady_clock::time_point> heard_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point started_ GUARDED_BY(mu_);
  // The last time this node led, or heard from the leader it knows.
  std::chrono::steady_clock::time_point leader_contact_ GUARDED_BY(mu_);
  // The last status the leader loop saw (refreshed every tick).
  uint32_t leader_id_ GUARDED_BY(mu_) = 0;
  bool leader_ GUARDED_BY(mu_) = false;
  std::vector<uint32_t> voters_ GUARDED_BY(mu_);
  std::string last_reconcile_error_ GUARDED_BY(mu_);
  // The configuration change under way (Reconcile runs one at a time), why none can be made, the
  // servers backing off after a change given up, and the last one given up.
  struct InFlight {
    uint64_t gen = 0;
    std::string what;
    std::chrono::steady_clock::time_point since;
  };
  std::optional<InFlight> inflight_ GUARDED_BY(mu_);
  uint64_t next_gen_ GUARDED_BY(mu_) = 1;
  std::string waiting_ GUARDED_BY(mu_);
  std::map<uint64_t, std::chrono::steady_clock::time_point> backoff_ GUARDED_BY(mu_);
  struct GivenUp {
    std::string what, why;
    std::chrono::steady_clock::time_point when;
  };
  std::optional<GivenUp> given_up_ GUARDED_BY(mu_);
  uint64_t changes_given_up_ GUARDED_BY(mu_) = 0;
  bool hand_on_if_uncommitted_ GUARDED_BY(mu_) = false;
  // From the leader loop's last status of the replica.
  std::string store_error_ GUARDED_BY(mu_);
  uint64_t store_errors_ GUARDED_BY(mu_) = 0;
  uint64_t recoveries_ GUARDED_BY(mu_) = 0;
  std::atomic<bool> running_{false};
  std::atomic<bool> fenced_{false};  // ComputeFence() at the last tick: the hot path reads this
  std::thread installer_;
  std::thread leader_loop_;
};

}  // namespace shardkv::cluster
