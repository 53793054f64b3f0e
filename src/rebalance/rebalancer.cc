#include "rebalance/rebalancer.h"

namespace shardkv::rebalance {

Rebalancer::Rebalancer(RebalancerOptions options, cluster::MapStore* maps, net::PeerPool* peers,
                       cluster::Membership* membership)
    : committer_(options.self_id, options.rpc_timeout, maps, peers, membership, options.consensus),
      planner_(options.self_id, options.rpc_timeout, peers, membership),
      driver_(options, maps, peers, membership, &committer_, &planner_),
      frontend_(options, maps, peers, membership, &committer_, &planner_, &driver_) {
  if (options.consensus != nullptr) planner_.AllowSelfRemoval();
}

Rebalancer::~Rebalancer() { Stop(); }

void Rebalancer::Start() {
  driver_.Start();
  frontend_.Start();
}

void Rebalancer::Stop() {
  // A commit in flight (a command's or the drive's) stops waiting for acknowledgements first, so
  // that neither join below waits for it.
  committer_.Stop();
  frontend_.Stop();
  driver_.Stop();
}

void Rebalancer::HandleAdmin(net::AdminRequest request, Reply done) {
  frontend_.Handle(std::move(request), std::move(done));
}

void Rebalancer::AddCounters(std::map<std::string, int64_t>* counters) const {
  (*counters)["rebalance_commits"] = static_cast<int64_t>(committer_.commits());
  (*counters)["rebalance_task_errors"] = static_cast<int64_t>(driver_.task_errors());
  (*counters)["rebalance_plans_counted"] = static_cast<int64_t>(planner_.plans_counted());
}

}  // namespace shardkv::rebalance
