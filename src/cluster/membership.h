// Membership: how a node keeps its cluster map current and knows who is alive.
//
// - Gossip: about every second the node pings every other member. A reply carries the peer's map
//   epoch; a newer epoch makes the node pull that peer's map (design.md "Propagation"). A peer
//   that answered recently counts as alive.
// - Installs: the admin op InstallMap either adopts a standalone node into a new cluster (cluster
//   formation), or is compare-and-set on the epoch for a change proposed by the claimant. After
//   installing, the node waits until every request it coordinated under an older epoch has
//   finished (the epoch barrier) before it acknowledges.
// - Startup: FetchNewestMap() asks the peers named in the persisted map for theirs, so a
//   restarted node never coordinates under a map the others have moved past.
// - Hinted handoff replay runs on the gossip thread, for targets that answer pings.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "cluster/clock_watch.h"
#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"

namespace shardkv::cluster {

struct MembershipOptions {
  uint32_t self_id = 0;
  // The cluster this node was started for (NodeOptions::cluster_id); 0 = any. Adoption into
  // another cluster is refused.
  uint64_t cluster_id = 0;
  std::chrono::milliseconds gossip_interval{1000};
  std::chrono::milliseconds ping_timeout{500};
  std::chrono::milliseconds barrier_timeout{5000};
  size_t hint_replay_per_tick = 2000;  // per target per gossip round: the replay rate limit
  uint64_t max_clock_offset_ms = 500;  // the offset beyond which this node's clock is skewed
};

class Membership {
 public:
  // REQUIRES: the pointers outlive the object (Stop() first).
  Membership(MembershipOptions options, MapStore* maps, net::PeerPool* peers,
             std::shared_ptr<Coordinator> coordinator, HintStore* hints);
  ~Membership();

  // Runs after an adopting install put the map in place, before the barrier (the node's map
  // consensus joins or founds the cluster's group). An error refuses the install. Before Start.
  void SetAdoptHook(std::function<Status(const ClusterMap&)> hook) {
    adopt_hook_ = std::move(hook);
  }

  void Start();
  void Stop();  // joins the threads; idempotent

  // Queues an InstallMap request; `done` gets an InstallMapResponse or an ErrorResponse.
  void HandleInstall(net::InstallMapRequest request, std::function<void(net::ResponseBody)> done);

  // Pulls the newest map from the peers of the current map (blocking, bounded by `timeout`
  // per peer). REQUIRES: not on a network thread.
  void FetchNewestMap(std::chrono::milliseconds timeout);

  bool IsAlive(uint32_t id) const;
  // True once the node has gossiped long enough for IsAlive() to mean something (a node that
  // just started has heard from nobody yet).
  bool Settled() const;

  // Installs a map proposed by this node itself (the rebalancer's commits), with the same rules
  // and epoch barrier as a remote InstallMap. Blocks; not on a network thread.
  net::ResponseBody InstallNow(const net::InstallMapRequest& request) { return Install(request); }

  // One round of pings to every peer (blocking, bounded by the ping timeout) and the clock
  // verdict from it: at start, so a node with a skewed clock never coordinates before it knows.
  // REQUIRES: not on a network thread.
  void MeasureClocks();
  // The clock verdict of the last gossip round (clock_watch.h).
  ClockVerdict Clock() const;
  // True when the last verdict measured node `id`'s clock within max_clock_offset_ms of this
  // node's (ClockVerdict::agreeing).
  bool ClockAgrees(uint32_t id) const;
  // While this node's clock is skewed: the address of a live member whose clock agrees with the
  // cluster's, to send client requests on to. Empty otherwise (coordinate here).
  std::string HealthyCoordinator() const;

  // Calls done(true) once this node's map reaches `epoch`, or done(false) after `timeout`.
  // Meanwhile the node pulls maps from its peers: a request carrying a newer epoch than ours
  // makes us fetch that map before serving it (design.md "Propagation").
  void AwaitEpoch(uint64_t epoch, std::chrono::milliseconds timeout,
                  std::function<void(bool)> done);

 private:
  void GossipLoop();
  void AdminLoop();
  void GossipOnce();
  void JudgeClock();
  void ReplayHints();
  net::ResponseBody Install(const net::InstallMapRequest& request);
  void PullMapFrom(const std::string& address);
  void WaiterLoop();

  struct Waiter {
    uint64_t epoch;
    std::chrono::steady_clock::time_point deadline;
    std::function<void(bool)> done;
  };

  const MembershipOptions options_;
  std::function<Status(const ClusterMap&)> adopt_hook_;
  MapStore* maps_;
  net::PeerPool* peers_;
  std::shared_ptr<Coordinator> coordinator_;
  HintStore* hints_;

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::map<uint32_t, std::chrono::steady_clock::time_point> last_seen_ GUARDED_BY(mu_);
  // When IsAlive() was first asked about a node never heard from: it gets the same grace as a
  // node last seen then (a member that just joined, or this node just started).
  mutable std::map<uint32_t, std::chrono::steady_clock::time_point> first_asked_ GUARDED_BY(mu_);
  std::deque<std::pair<net::InstallMapRequest, std::function<void(net::ResponseBody)>>> installs_
      GUARDED_BY(mu_);
  std::vector<Waiter> waiters_ GUARDED_BY(mu_);
  ClockWatch clock_;
  ClockVerdict verdict_ GUARDED_BY(mu_);
  std::atomic<bool> skewed_{false};  // verdict_.skewed, for the request path
  std::chrono::steady_clock::time_point started_;
  std::thread gossip_thread_;
  std::thread admin_thread_;
  std::thread waiter_thread_;
};

}  // namespace shardkv::cluster
