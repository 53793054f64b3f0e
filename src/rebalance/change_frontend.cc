// ChangeFrontend (change_frontend.h): the typed change commands.
#include "rebalance/change_frontend.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "clustermap/cluster_map_builder.h"
#include "rebalance/change_text.h"

namespace shardkv::rebalance {
namespace {

net::ResponseBody Error(const Status& s) { return net::ErrorResponse{s.code(), s.message()}; }

}  // namespace

ChangeFrontend::ChangeFrontend(RebalancerOptions options, cluster::MapStore* maps,
                               cluster::Membership* membership, cluster::MapCommitter* committer,
                               ChangePlanner* planner, ChangeDriver* driver)
    : options_(options),
      maps_(maps),
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
  for (auto& [request, done] : left) done(Error(Status::Unavailable("node is shutting down")));
}

void ChangeFrontend::Handle(net::AdminRequest request, Reply done) {
  common::MutexLock lock(&mu_);
  if (stopping_) {
    lock.Unlock();
    return done(Error(Status::Unavailable("node is shutting down")));
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

net::ResponseBody ChangeFrontend::Execute(const net::AdminRequest& request) {
  const bool status = std::holds_alternative<net::ChangeStatusCommand>(request.command);
  // Never plan or commit from a stale map: a proposal from behind is refused by everyone.
  if (!status) membership_->FetchNewestMap(options_.rpc_timeout);
  auto map = maps_->Current();
  if (!map) return Error(Status::Unavailable("node has no cluster map"));
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
    return Error(Status::FailedPrecondition(
        Describe(*current) +
        " is still running; only one change at a time (watch it, or cancel it while it is "
        "streaming)"));
  }
  auto plan = planner_->Plan(map, change, throttle, /*reuse=*/begin);
  if (!plan.ok()) return Error(plan.status());
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
  if (!s.ok()) return Error(s);
  spdlog::info("{} committed: {} copies to move in {} stream tasks", Describe(rec),
               rec.planned_copies, rec.planned_ranges);
  driver_->Wake();
  return net::AdminResponse{Report()};
}

net::ResponseBody ChangeFrontend::Steer(const ClusterMap& map, const net::ChangeCommand& command) {
  auto current = clustermap::RecordOf(map);
  if (!map.has_pending() || !current.ok()) {
    return Error(Status::FailedPrecondition("no change is running"));
  }
  const ChangeRecord& rec = *current;
  const bool cancel = std::holds_alternative<net::CancelChangeCommand>(command);
  const bool resume = std::holds_alternative<net::ResumeChangeCommand>(command);
  const auto* throttle = std::get_if<net::ThrottleChangeCommand>(&command);
  if (cancel) {
    // Streaming or failed: joint writes, reads still from the old replicas.
    if (rec.state != ChangeState::kStreaming && rec.state != ChangeState::kFailed) {
      return Error(Status::FailedPrecondition(
          Describe(rec) +
          " is past streaming: the new replicas already serve reads, so cancel is refused; it "
          "will finish (watch it with `shardkv rebalance watch`)"));
    }
  } else if (resume) {
    if (rec.state != ChangeState::kFailed) {
      return Error(
          Status::FailedPrecondition(Describe(rec) + " has not failed; nothing to resume"));
    }
  } else if (throttle != nullptr) {
    if (!throttle->rate_bytes_per_s && !throttle->streams_per_node) {
      return Error(Status::InvalidArgument("throttle needs a rate and/or a stream count"));
    }
    if (throttle->streams_per_node && *throttle->streams_per_node == 0) {
      return Error(Status::InvalidArgument("streams per node must be at least 1"));
    }
  } else {
    return Error(Status::InvalidArgument("unknown change command"));
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
  if (!s.ok()) return Error(s);
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
  if (!rec.ok()) return report;
  report.has_change = true;
  report.record = *rec;
  report.from_driver = !map->has_pending() || map->claimant() == options_.self_id;
  const uint64_t end_ms = rec->finished_ms != 0 ? rec->finished_ms : WallMs();
  report.elapsed_s = rec->started_ms == 0 ? 0 : static_cast<double>(end_ms - rec->started_ms) / 1e3;
  driver_->AddProgress(&report);
  return report;
}

}  // namespace shardkv::rebalance
