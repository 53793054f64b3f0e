// ChangeFrontend: the typed command side of membership changes (net::AdminRequest from
// shardkv::Admin): plan, begin, status, cancel, resume, throttle. It checks a command against the
// newest map, plans with the ChangePlanner, commits begin/cancel/resume/throttle through the
// MapCommitter, wakes the ChangeDriver, and answers with a ChangeReport. It drives nothing
// itself (the split of Redpanda's members_frontend / members_backend).
//
// Commands run on two worker threads of their own, never on an I/O thread: planning counts every
// key, and commits wait for acknowledgements. Two, so a long plan or begin never blocks status
// queries completely, and the thread count stays fixed however many requests arrive.
//
// Thread-safety: all public methods are thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/map_committer.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/change_driver.h"
#include "rebalance/change_planner.h"

namespace shardkv::rebalance {

class ChangeFrontend {
 public:
  using Reply = std::function<void(net::ResponseBody)>;

  // REQUIRES: the pointers outlive the object (Stop() first).
  ChangeFrontend(RebalancerOptions options, cluster::MapStore* maps, net::PeerPool* peers,
                 cluster::Membership* membership, cluster::MapCommitter* committer,
                 ChangePlanner* planner, ChangeDriver* driver);
  ~ChangeFrontend();

  void Start();
  // Joins the workers; queued commands are answered Unavailable.
  void Stop();
  void Handle(net::AdminRequest request, Reply done);

 private:
  net::ResponseBody Execute(const net::AdminRequest& request);
  // With consensus, on a node that does not lead: the leader's answer, or why there is none
  // ("no majority: ..."). nullopt: this node leads and executes the command itself.
  std::optional<net::ResponseBody> ForwardToLeader(const net::AdminRequest& request);
  // A change that removes this node, begun on the leader: leadership moves first, so a leaving
  // node never drives its own removal.
  bool RemovesSelf(const net::AdminRequest& request) const;
  net::ResponseBody PlanOrBegin(const ClusterMap& map, const ChangeRequest& change,
                                const ChangeThrottle& throttle, bool begin);
  // cancel, resume, throttle: one commit on the running change's record.
  net::ResponseBody Steer(const ClusterMap& map, const net::ChangeCommand& command);
  ChangeReport Report();
  void Loop();

  const RebalancerOptions options_;
  cluster::MapStore* maps_;
  net::PeerPool* peers_;
  cluster::Membership* membership_;
  cluster::MapCommitter* committer_;
  ChangePlanner* planner_;
  ChangeDriver* driver_;

  common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::deque<std::pair<net::AdminRequest, Reply>> queue_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace shardkv::rebalance
