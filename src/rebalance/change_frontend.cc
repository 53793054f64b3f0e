// ChangeFrontend (change_frontend.h): the typed change commands.
#include "rebalance/change_frontend.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "clustermap/cluster_map_builder.h"
#include "rebalance/change_text.h"

namespace shardkv::rebalance {
ChangeFrontend::ChangeFrontend(RebalancerOptions options, cluster::MapStore* maps,
                               net::PeerPool* peers, cluster::Membership* membership,
                               cluster::MapCommitter* committer, ChangePlanner* planner,
                               ChangeDriver* driver)
    : options_(options),
      maps_(maps),
      peers_(peers),
      membership_(membership),
      committer_(committer),
      planner_(planner),
      driver_(driver) {}

ChangeFrontend::~ChangeFrontend() { Stop(); }

void ChangeFrontend::Start() {
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { Loop(); });
}

void ChangeFrontend::Stop() {
  std::deque<std::pair<net::AdminRequest, Reply>> left;
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
    left.swap(queue_);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  for (auto& [request, done] : left)
    done(net::ErrorBody(Status::Unavailable("node is shutting down")));
}

void ChangeFrontend::Handle(net::AdminRequest request, Reply done) {
  common::MutexLock lock(&mu_);
  if (stopping_) {
    lock.Unlock();
    return done(net::ErrorBody(Status::Unavailable("node is shutting down")));
  }
  queue_.emplace_back(std::move(request), std::move(done));
  wake_.notify_all();
}

void ChangeFrontend::Loop() {
  for (;;) {
    std::pair<net::AdminRequest, Reply> item;
    {
      common::MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) lock.Wait(wake_);
      if (stopping_) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    item.second(Execute(item.first));
  }
}

bool ChangeFrontend::RemovesSelf(const net::AdminRequest& request) const {
  const auto* begin = std::get_if<net::BeginChangeCommand>(&request.command);
  return begin != nullptr && begin->change.kind == ChangeKind::kRemove &&
         begin->change.node_id == options_.self_id;
}

std::optional<net::ResponseBody> ChangeFrontend::ForwardToLeader(const net::AdminRequest& request) {
  cluster::MapConsensus* consensus = options_.consensus;
  if (consensus == nullptr || !consensus->running()) return std::nullopt;
  const bool status = std::holds_alternative<net::ChangeStatusCommand>(request.command);
  // Plans too: the leader keeps the plan, and a begin of the same change reuses it.
  const bool plan = std::holds_alternative<net::PlanChangeCommand>(request.command);
  const auto wait_end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  // Just after formation or a start the first election may still be due: wait for it.
  while (consensus->Young() && consensus->LeaderId() == 0 &&
         std::chrono::steady_clock::now() < wait_end + std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // A side without a majority cannot change the map: say so at once, before planning.
  if (!status && !plan) {
    if (Status s = committer_->CheckMajority(); !s.ok()) return net::ErrorBody(s);
  }
  auto wait_for_leader = [&](bool other) {
    while (std::chrono::steady_clock::now() < wait_end) {
      const uint32_t leader = consensus->LeaderId();
      if (leader != 0 && (!other || leader != options_.self_id)) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };
  wait_for_leader(false);
  if (request.forwarded) {
    // Sent here as to the leader: it may have been elected a moment ago (the cached role is
    // refreshed every tick).
    while (!consensus->IsLeader() && std::chrono::steady_clock::now() < wait_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  bool handed_on = false;  // this node just handed leadership on: it forwards even a forwarded
  if (consensus->IsLeader()) {
    // The last voter removing itself: the planner refuses it (or a standby remains to lead).
    if (!RemovesSelf(request) || consensus->Voters().size() <= 1) return std::nullopt;
    // A leaving node never drives its own removal: hand leadership on, then forward.
    Status moved = consensus->TransferLeadership(std::chrono::seconds(3));
    if (!moved.ok()) {
      return net::ErrorBody(
          Status::Unavailable("node " + std::to_string(options_.self_id) +
                              " leads and is the node to remove; handing leadership "
                              "on failed: " +
                              moved.ToString()));
    }
    wait_for_leader(true);
    handed_on = true;
  }
  const uint32_t leader = consensus->LeaderId();
  const std::string address = consensus->LeaderAddress();
  if (leader == options_.self_id) return std::nullopt;
  if ((request.forwarded && !handed_on) || leader == 0 || address.empty()) {
    if (status || plan) return std::nullopt;  // answered from this node's map
    return net::ErrorBody(
        Status(Status::Code::kUnavailable, Status::Reason::kNotLeader,
               request.forwarded ? "node " + std::to_string(options_.self_id) +
                                       " does not lead (a leader change is in progress); try again"
                                 : std::string("no leader is elected yet; try again")));
  }
  auto map = maps_->Current();
  net::AdminRequest forwarded = request;
  forwarded.forwarded = true;
  auto send = [&](const std::string& to) {
    net::Request req;
    if (map) req.cluster_id = map->cluster_id();
    req.body = forwarded;
    // A begin plans, which counts every key: allow it the time a client allows a plan.
    return peers_->CallSync(to, std::move(req), std::chrono::seconds(120));
  };
  auto reply = send(address);
  // Our view of the leader was a moment behind (it lost office since): ask the new one, for a
  // few seconds at most. Nothing was done by a node that answered "does not lead".
  for (int retry = 0; retry < 30 && reply.ok(); ++retry) {
    const auto* e = std::get_if<net::ErrorResponse>(&reply->body);
    if (e == nullptr || e->reason != Status::Reason::kNotLeader) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint32_t now_leader = consensus->LeaderId();
    if (now_leader == options_.self_id && consensus->IsLeader()) return std::nullopt;
    if (now_leader == 0 || now_leader == options_.self_id) continue;
    const std::string now_address = consensus->LeaderAddress();
    if (!now_address.empty()) reply = send(now_address);
  }
  // The leader is gone (its port refuses connections, so nothing was delivered): the voters
  // elect another within an election timeout or two; ask that one rather than fail a command
  // sent right after a kill (bounded: 6 s).
  uint32_t asked = leader;
  std::string asked_address = address;
  const auto reelect_end = std::chrono::steady_clock::now() + std::chrono::seconds(6);
  // A status is answered from this node's map meanwhile instead.
  while (!status && !reply.ok() && reply.status().Is(Status::Reason::kUnreachable) &&
         std::chrono::steady_clock::now() < reelect_end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const uint32_t now_leader = consensus->LeaderId();
    if (now_leader == options_.self_id && consensus->IsLeader()) return std::nullopt;
    if (now_leader == 0 || now_leader == options_.self_id || now_leader == asked) continue;
    const std::string now_address = consensus->LeaderAddress();
    if (now_address.empty()) continue;
    asked = now_leader;
    asked_address = now_address;
    reply = send(now_address);
  }
  const std::string who = "the leader, node " + std::to_string(asked) + " (" + asked_address + ")";
  if (!reply.ok()) {
    if (status || plan) return std::nullopt;
    if (reply.status().code() == Status::Code::kTimeout) {
      return net::ErrorBody(Status(Status::Code::kTimeout, Status::Reason::kOutcomeUnknown,
                                   "forwarded to " + who + ", which did not answer in time: " +
                                       reply.status().message() + "; outcome unknown"));
    }
    // The reason stays the transport's: a connection lost in flight leaves the outcome unknown.
    return net::ErrorBody(Status(Status::Code::kUnavailable, reply.status().reason(),
                                 who + " is unreachable: " + reply.status().ToString()));
  }
  return std::move(reply->body);
}

net::ResponseBody ChangeFrontend::Execute(const net::AdminRequest& request) {
  if (auto forwarded = ForwardToLeader(request)) return std::move(*forwarded);
  const bool status = std::holds_alternative<net::ChangeStatusCommand>(request.command);
  // Never plan or commit from a stale map: a proposal from behind is refused by everyone.
  if (!status) membership_->FetchNewestMap(options_.rpc_timeout);
  auto map = maps_->Current();
  if (!map) return net::ErrorBody(Status::Unavailable("node has no cluster map"));
  if (status) return net::AdminResponse{Report()};
  if (const auto* plan = std::get_if<net::PlanChangeCommand>(&request.command)) {
    return PlanOrBegin(*map, plan->change, plan->throttle, /*begin=*/false);
  }
  if (const auto* begin = std::get_if<net::BeginChangeCommand>(&request.command)) {
    return PlanOrBegin(*map, begin->change, begin->throttle, /*begin=*/true);
  }
  return Steer(*map, request.command);
}

net::ResponseBody ChangeFrontend::PlanOrBegin(const ClusterMap& map, const ChangeRequest& change,
                                              const ChangeThrottle& throttle, bool begin) {
  if (auto current = clustermap::RecordOf(map); map.has_pending() && current.ok()) {
    return net::ErrorBody(Status::FailedPrecondition(
        Describe(*current) +
        " is still running; only one change at a time (watch it, or cancel it while it is "
        "streaming)"));
  }
  auto plan = planner_->Plan(map, change, throttle, /*reuse=*/begin);
  if (!plan.ok()) return net::ErrorBody(plan.status());
  if (!begin) return net::AdminResponse{std::move(plan->report)};
  ChangeRecord rec = plan->report.record;
  rec.state = ChangeState::kStreaming;
  rec.started_ms = WallMs();
  rec.client_errors_at_start = planner_->SumClientErrors(map);
  const uint64_t expected = map.epoch();
  Status s = committer_->Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
    if (cur.epoch() != expected) {
      return Status::Aborted("the cluster map changed while planning; try again");
    }
    rec.from_epoch = cur.epoch();
    return clustermap::WithChange(plan->target, rec);
  });
  if (!s.ok()) return net::ErrorBody(s);
  spdlog::info("{} committed: {} copies to move in {} stream tasks", Describe(rec),
               rec.planned_copies, rec.planned_ranges);
  driver_->Wake();
  return net::AdminResponse{Report()};
}

net::ResponseBody ChangeFrontend::Steer(const ClusterMap& map, const net::ChangeCommand& command) {
  auto current = clustermap::RecordOf(map);
  if (!map.has_pending() || !current.ok()) {
    return net::ErrorBody(Status::FailedPrecondition("no change is running"));
  }
  const ChangeRecord& rec = *current;
  const bool cancel = std::holds_alternative<net::CancelChangeCommand>(command);
  const bool resume = std::holds_alternative<net::ResumeChangeCommand>(command);
  const auto* throttle = std::get_if<net::ThrottleChangeCommand>(&command);
  if (cancel) {
    // Streaming or failed: joint writes, reads still from the old replicas.
    if (rec.state != ChangeState::kStreaming && rec.state != ChangeState::kFailed) {
      return net::ErrorBody(Status::FailedPrecondition(
          Describe(rec) +
          " is past streaming: the new replicas already serve reads, so cancel is refused; it "
          "will finish (watch it with `shardkv rebalance watch`)"));
    }
  } else if (resume) {
    if (rec.state != ChangeState::kFailed) {
      return net::ErrorBody(
          Status::FailedPrecondition(Describe(rec) + " has not failed; nothing to resume"));
    }
  } else if (throttle != nullptr) {
    if (!throttle->rate_bytes_per_s && !throttle->streams_per_node) {
      return net::ErrorBody(Status::InvalidArgument("throttle needs a rate and/or a stream count"));
    }
    if (throttle->streams_per_node && *throttle->streams_per_node == 0) {
      return net::ErrorBody(Status::InvalidArgument("streams per node must be at least 1"));
    }
  } else {
    return net::ErrorBody(Status::InvalidArgument("unknown change command"));
  }
  Status s = committer_->Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
    auto now_rec = clustermap::RecordOf(cur);
    if (!cur.has_pending() || !now_rec.ok() || now_rec->change_id != rec.change_id) {
      return Status::Aborted("the change ended meanwhile");
    }
    ChangeRecord next = *now_rec;
    if (cancel) {
      if (next.state != ChangeState::kStreaming && next.state != ChangeState::kFailed) {
        return Status::FailedPrecondition("the change moved past streaming");
      }
      next.state = ChangeState::kCancelled;
      next.finished_ms = WallMs();
      driver_->FillMoved(&next);  // what had been copied (the destinations drop it again)
      auto cancelled = clustermap::WithChangeCancelled(cur);
      if (!cancelled.ok()) return cancelled.status();
      return clustermap::WithChange(*cancelled, next);
    }
    if (resume) {
      next.state = ChangeState::kStreaming;
      next.error.clear();
      // An operator's resume: the takeover budget starts again (rebalancer.h).
      next.takeovers = 0;
      next.failed_driver = 0;
    } else {
      if (throttle->rate_bytes_per_s) next.rate_bytes_per_s = *throttle->rate_bytes_per_s;
      if (throttle->streams_per_node) next.streams_per_node = *throttle->streams_per_node;
    }
    return clustermap::WithChange(cur, next);
  });
  if (!s.ok()) return net::ErrorBody(s);
  driver_->Wake();
  return net::AdminResponse{Report()};
}

ChangeReport ChangeFrontend::Report() {
  ChangeReport report;
  auto map = maps_->Current();
  if (!map) return report;
  auto rec = clustermap::RecordOf(*map);
  report.epoch = map->epoch();
  report.driver = map->claimant();
  if (const ClusterNode* d = map->FindNode(map->claimant())) report.driver_address = d->address;
  // The leader's map is the decided one: its "no change" is an answer, another node's may only
  // mean the map has not reached it yet (`rebalance watch` asks again).
  const bool leads = options_.consensus != nullptr && options_.consensus->running() &&
                     options_.consensus->IsLeader();
  report.from_driver = leads;
  if (!rec.ok()) return report;
  report.has_change = true;
  report.record = *rec;
  report.from_driver = leads || !map->has_pending() || map->claimant() == options_.self_id;
  const uint64_t end_ms = rec->finished_ms != 0 ? rec->finished_ms : WallMs();
  report.elapsed_s = rec->started_ms == 0 ? 0 : static_cast<double>(end_ms - rec->started_ms) / 1e3;
  driver_->AddProgress(&report);
  return report;
}

}  // namespace shardkv::rebalance
