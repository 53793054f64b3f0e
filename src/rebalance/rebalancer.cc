#include "rebalance/rebalancer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <random>
#include <set>

#include "clustermap/cluster_map_builder.h"

namespace shardkv::rebalance {
namespace {

net::ResponseBody Error(const ::shardkv::Status& s) {
  return net::ErrorResponse{s.code(), s.message()};
}

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string Arg(const std::map<std::string, std::string>& args, const std::string& k,
                const std::string& fallback = "") {
  auto it = args.find(k);
  return it == args.end() ? fallback : it->second;
}

std::string Describe(const ChangeRecord& r) {
  return "change " + std::to_string(r.change_id) + " (" + std::string(ChangeKindName(r.kind)) +
         " node " + std::to_string(r.node_id) + ", " + std::string(ChangeStateName(r.state)) + ")";
}

}  // namespace

Rebalancer::Rebalancer(RebalancerOptions options, MapStore* maps, PeerPool* peers,
                       Membership* membership)
    : options_(options),
      maps_(maps),
      peers_(peers),
      membership_(membership),
      committer_(options.self_id, options.rpc_timeout, maps, peers, membership) {}

Rebalancer::~Rebalancer() { Stop(); }

void Rebalancer::Start() {
  drive_thread_ = std::thread([this] { DriveLoop(); });
  // Two admin workers: a long plan/begin (it counts every key) never blocks status queries
  // behind it completely, and the thread count stays fixed however many requests arrive.
  for (int i = 0; i < 2; ++i) admin_threads_.emplace_back([this] { AdminLoop(); });
}

void Rebalancer::AdminLoop() {
  for (;;) {
    std::pair<net::AdminRequest, Reply> item;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && admin_queue_.empty()) lock.Wait(wake_);
      if (stopping_) return;
      item = std::move(admin_queue_.front());
      admin_queue_.pop_front();
    }
    item.second(Admin(item.first));
  }
}

void Rebalancer::Stop() {
  std::deque<std::pair<net::AdminRequest, Reply>> left;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    left.swap(admin_queue_);
  }
  wake_.notify_all();
  committer_.Stop();  // a commit in flight stops waiting for acknowledgements
  if (drive_thread_.joinable()) drive_thread_.join();
  for (auto& t : admin_threads_) t.join();
  admin_threads_.clear();
  for (auto& [request, done] : left) {
    done(Error(::shardkv::Status::Unavailable("node is shutting down")));
  }
}

void Rebalancer::AddCounters(std::map<std::string, int64_t>* counters) const {
  (*counters)["rebalance_commits"] = static_cast<int64_t>(committer_.commits());
  (*counters)["rebalance_task_errors"] = static_cast<int64_t>(task_errors_.load());
}

void Rebalancer::HandleAdmin(net::AdminRequest request, Reply done) {
  // Planning counts every key and commits wait for acknowledgements: never on an I/O thread.
  MutexLock lock(&mu_);
  if (stopping_) {
    lock.Unlock();
    return done(Error(::shardkv::Status::Unavailable("node is shutting down")));
  }
  admin_queue_.emplace_back(std::move(request), std::move(done));
  wake_.notify_all();
}

bool Rebalancer::ChangeStillRunning(uint64_t change_id) const {
  auto map = maps_->Current();
  if (!map || !map->has_pending()) return false;
  auto rec = ChangeRecord::Decode(map->change_detail());
  return rec.ok() && rec->change_id == change_id && rec->state == ChangeState::kStreaming;
}

// ---- Admin -------------------------------------------------------------------------------

net::ResponseBody Rebalancer::Admin(const net::AdminRequest& request) {
  const std::string& cmd = request.command;
  if (cmd != "status") {
    // Never plan or commit from a stale map: a proposal from behind is refused by everyone.
    membership_->FetchNewestMap(options_.rpc_timeout);
  }
  auto map = maps_->Current();
  if (!map) return Error(::shardkv::Status::Unavailable("node has no cluster map"));
  auto current_record = ChangeRecord::Decode(map->change_detail());
  if (cmd == "status") return net::AdminResponse{Report().Encode()};
  if (cmd == "plan" || cmd == "begin") {
    if (map->has_pending() && current_record.ok()) {
      return Error(::shardkv::Status::FailedPrecondition(
          Describe(*current_record) +
          " is still running; only one change at a time (watch it, or cancel it while it is "
          "streaming)"));
    }
    ClusterMap target = *map;
    auto report = PlanChange(request.args, &target);
    if (!report.ok()) return Error(report.status());
    if (cmd == "plan") return net::AdminResponse{report->Encode()};
    ChangeRecord rec = report->record;
    rec.state = ChangeState::kStreaming;
    rec.started_ms = WallMs();
    rec.client_errors_at_start = SumClientErrors(*map);
    const uint64_t expected = map->epoch();
    auto s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
      if (cur.epoch() != expected) {
        return ::shardkv::Status::Aborted("the cluster map changed while planning; try again");
      }
      rec.from_epoch = cur.epoch();
      return WithChangeDetail(target, rec.Encode());
    });
    if (!s.ok()) return Error(s);
    spdlog::info("{} committed: {} copies to move in {} stream tasks", Describe(rec),
                 rec.planned_copies, rec.planned_ranges);
    wake_.notify_all();
    return net::AdminResponse{Report().Encode()};
  }
  if (cmd == "cancel" || cmd == "resume" || cmd == "throttle") {
    if (!map->has_pending() || !current_record.ok()) {
      return Error(::shardkv::Status::FailedPrecondition("no change is running"));
    }
    ChangeRecord rec = *current_record;
    if (cmd == "cancel") {
      if (map->stage() != ChangeStage::kJointWrites ||
          (rec.state != ChangeState::kStreaming && rec.state != ChangeState::kFailed)) {
        return Error(::shardkv::Status::FailedPrecondition(
            Describe(rec) +
            " is past streaming: the new replicas already serve reads, so cancel is refused; "
            "it will finish (watch it with `shardkv rebalance watch`)"));
      }
    } else if (cmd == "resume" && rec.state != ChangeState::kFailed) {
      return Error(::shardkv::Status::FailedPrecondition(Describe(rec) +
                                                         " has not failed; nothing to resume"));
    }
    auto s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
      auto now_rec = ChangeRecord::Decode(cur.change_detail());
      if (!cur.has_pending() || !now_rec.ok() || now_rec->change_id != rec.change_id) {
        return ::shardkv::Status::Aborted("the change ended meanwhile");
      }
      ChangeRecord next = *now_rec;
      if (cmd == "cancel") {
        if (cur.stage() != ChangeStage::kJointWrites) {
          return ::shardkv::Status::FailedPrecondition("the change moved past streaming");
        }
        next.state = ChangeState::kCancelled;
        next.finished_ms = WallMs();
        {
          // What had been copied when it was cancelled (the destinations drop it again).
          MutexLock lock(&mu_);
          FillMovedLocked(&next);
        }
        auto cancelled = WithChangeCancelled(cur);
        if (!cancelled.ok()) return cancelled.status();
        return WithChangeDetail(*cancelled, next.Encode());
      }
      if (cmd == "resume") {
        next.state = ChangeState::kStreaming;
        next.error.clear();
        // An operator's resume: the takeover budget starts again (rebalancer.h).
        next.takeovers = 0;
        next.failed_driver = 0;
      } else {
        const std::string rate = Arg(request.args, "rate_mb");
        const std::string streams = Arg(request.args, "streams");
        try {
          if (!rate.empty()) next.rate_bytes_per_s = std::stoull(rate) << 20;
          if (!streams.empty()) next.streams_per_node = std::max(1, std::stoi(streams));
        } catch (const std::exception&) {
          return ::shardkv::Status::InvalidArgument("throttle needs whole numbers");
        }
      }
      return WithChangeDetail(cur, next.Encode());
    });
    if (!s.ok()) return Error(s);
    wake_.notify_all();
    return net::AdminResponse{Report().Encode()};
  }
  return Error(::shardkv::Status::InvalidArgument("unknown rebalance command '" + cmd + "'"));
}

RebalanceReport Rebalancer::Report() {
  RebalanceReport report;
  auto map = maps_->Current();
  if (!map) return report;
  auto rec = ChangeRecord::Decode(map->change_detail());
  report.epoch = map->epoch();
  report.driver = map->claimant();
  if (const ClusterNode* d = map->FindNode(map->claimant())) report.driver_address = d->address;
  if (!rec.ok()) return report;
  report.has_change = true;
  report.record = *rec;
  const bool pending = map->has_pending();
  report.from_driver = !pending || map->claimant() == options_.self_id;
  const uint64_t end_ms = rec->finished_ms != 0 ? rec->finished_ms : WallMs();
  report.elapsed_s = rec->started_ms == 0 ? 0 : static_cast<double>(end_ms - rec->started_ms) / 1e3;
  MutexLock lock(&mu_);
  if (pending && rec->state == ChangeState::kNewOnly && phase_ == "cleanup") {
    report.record.state = ChangeState::kCleanup;
  }
  // Live progress from this driver's tasks while streaming, and while failed (a failed change
  // keeps what it moved; the record has the same counts, committed when it failed).
  const bool live = pending && active_change_ == rec->change_id &&
                    (rec->state == ChangeState::kStreaming || rec->state == ChangeState::kFailed);
  if (!live) {
    report.copies_done = rec->moved_copies;
    report.tombstones_done = rec->moved_tombstones;
    report.bytes_done = rec->moved_bytes;
    report.copies_during_change = rec->moved_during_change;
    return report;
  }
  std::map<std::pair<uint32_t, uint32_t>, StreamProgress> pairs;
  for (const TaskState& t : tasks_) {
    StreamProgress& p = pairs[{t.task.sources[0], t.task.destination}];
    p.source = t.task.sources[0];
    p.destination = t.task.destination;
    ++p.tasks_total;
    p.tasks_done += t.done ? 1 : 0;
    p.ranges_total += t.task.ranges.size();
    p.ranges_done += t.ranges_done;
    report.copies_during_change += t.copies_during_change;
    p.copies_planned += t.planned_copies;
    p.bytes_planned += t.planned_bytes;
    p.copies_done += t.copies;
    p.bytes_done += t.bytes;
    report.copies_done += t.copies;
    report.tombstones_done += t.tombstones;
    report.bytes_done += t.bytes;
  }
  for (auto& [k, p] : pairs) report.streams.push_back(p);
  return report;
}

// ---- Driving -----------------------------------------------------------------------------

bool Rebalancer::IsDriver(const ClusterMap& map) const {
  if (map.claimant() == options_.self_id) return true;
  if (!membership_->Settled() || membership_->IsAlive(map.claimant())) return false;
  for (const ClusterNode& n : map.nodes()) {
    if (n.id < options_.self_id && membership_->IsAlive(n.id)) return false;
  }
  return map.FindNode(options_.self_id) != nullptr;
}

void Rebalancer::DriveLoop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      const auto tick_end = std::chrono::steady_clock::now() + options_.tick;
      while (!stopping_) {
        if (!lock.WaitUntil(wake_, tick_end)) break;
      }
      if (stopping_) return;
    }
    // The drive's boundary: whatever goes wrong inside (a thread that cannot be created, an
    // allocation that fails) fails the change with the reason; it never ends the process.
    std::string failure;
    uint64_t change = 0;
    try {
      DriveOnce();
    } catch (const std::exception& e) {
      failure = e.what();
    } catch (...) {
      failure = "unknown exception";
    }
    if (failure.empty()) continue;
    auto map = maps_->Current();
    auto rec = ChangeRecord::Decode(map ? map->change_detail() : std::string());
    if (map && map->has_pending() && rec.ok()) change = rec->change_id;
    spdlog::error("driving the change failed: {}", failure);
    if (change != 0) {
      try {
        FailChange(change, "driver node " + std::to_string(options_.self_id) + ": " + failure,
                   options_.self_id);
      } catch (const std::exception& e) {
        spdlog::error("could not mark the change failed: {}", e.what());
      }
    }
  }
}

void Rebalancer::FillMovedLocked(ChangeRecord* rec) const {
  if (active_change_ != rec->change_id || tasks_.empty()) return;  // keep the record's counts
  rec->moved_copies = rec->moved_tombstones = rec->moved_bytes = rec->resumed_tasks = 0;
  rec->moved_during_change = rec->resumed_copies = 0;
  for (const TaskState& t : tasks_) {
    rec->moved_copies += t.copies;
    rec->moved_tombstones += t.tombstones;
    rec->moved_bytes += t.bytes;
    rec->resumed_tasks += t.resumed ? 1 : 0;
    rec->moved_during_change += t.copies_during_change;
    rec->resumed_copies += t.resumed_copies;
  }
}

void Rebalancer::FailChange(uint64_t change_id, const std::string& reason, uint32_t failed_driver) {
  ::shardkv::Status s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
    auto r = ChangeRecord::Decode(cur.change_detail());
    if (!cur.has_pending() || !r.ok() || r->change_id != change_id) {
      return ::shardkv::Status::Aborted("the change ended meanwhile");
    }
    ChangeRecord next = *r;
    {
      MutexLock lock(&mu_);
      FillMovedLocked(&next);
    }
    next.state = ChangeState::kFailed;
    next.error = reason;
    next.failed_driver = failed_driver;
    return WithChangeDetail(cur, next.Encode());
  });
  if (!s.ok()) spdlog::warn("marking change {} failed: {}", change_id, s.ToString());
}

void Rebalancer::DriveOnce() {
  auto map = maps_->Current();
  if (!map || !map->has_pending()) return;
  auto rec = ChangeRecord::Decode(map->change_detail());
  if (!rec.ok() || !IsDriver(*map)) return;
  const uint64_t change = rec->change_id;
  auto same_change = [change](const ClusterMap& cur) -> ::shardkv::Status {
    auto r = ChangeRecord::Decode(cur.change_detail());
    if (!cur.has_pending() || !r.ok() || r->change_id != change) {
      return ::shardkv::Status::Aborted("the change ended meanwhile");
    }
    return ::shardkv::Status::OK();
  };
  if (map->claimant() != options_.self_id) {
    const uint32_t dead = map->claimant();
    spdlog::warn("claimant node {} is down; node {} takes over {}", dead, options_.self_id,
                 Describe(*rec));
    static_cast<void>(Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
      SHARDKV_RETURN_IF_ERROR(same_change(cur));
      auto r = ChangeRecord::Decode(cur.change_detail());
      ChangeRecord next = *r;
      if (next.state == ChangeState::kStreaming) {
        // A takeover resumes the streams from their checkpoints once. A second driver death
        // while streaming fails the change: whatever killed two drivers would likely kill the
        // next one too (every node of a cluster went down that way once).
        if (next.takeovers >= 1) {
          next.state = ChangeState::kFailed;
          next.failed_driver = dead;
          next.error = "driver node " + std::to_string(dead) +
                       " died while streaming, after an earlier takeover (" +
                       std::to_string(next.takeovers) +
                       "); not taken over again: check its log, then `shardkv rebalance resume` "
                       "or `cancel`";
          spdlog::error("{}: {}", Describe(next), next.error);
        }
        ++next.takeovers;
      }
      return WithChangeDetail(cur, next.Encode());
    }));
    return;
  }
  ::shardkv::Status s;
  switch (rec->state) {
    case ChangeState::kStreaming: {
      ::shardkv::Status streamed = RunStreams(*map, *rec);
      if (streamed.code() == ::shardkv::Status::Code::kAborted) return;  // cancelled, stopped
      ChangeRecord next = *rec;
      {
        // A failed change keeps what it moved, so `status` does not report 0.
        MutexLock lock(&mu_);
        FillMovedLocked(&next);
      }
      if (streamed.ok()) {
        next.state = ChangeState::kReadNew;
      } else {
        next.state = ChangeState::kFailed;
        next.error = streamed.ToString();
        next.failed_driver = options_.self_id;
        spdlog::error("{} failed: {}", Describe(*rec), next.error);
      }
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(same_change(cur));
        auto r = ChangeRecord::Decode(cur.change_detail());
        // Settings changed meanwhile (throttle) are kept: only the outcome is ours.
        ChangeRecord merged = next;
        merged.rate_bytes_per_s = r->rate_bytes_per_s;
        merged.streams_per_node = r->streams_per_node;
        merged.takeovers = r->takeovers;
        ClusterMap m = WithChangeDetail(cur, merged.Encode());
        return next.state == ChangeState::kReadNew ? WithStage(m, ChangeStage::kReadNew) : m;
      });
      break;
    }
    case ChangeState::kReadNew: {
      ChangeRecord next = *rec;
      next.state = ChangeState::kNewOnly;
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(same_change(cur));
        return WithChangeDetail(WithStage(cur, ChangeStage::kNewOnly), next.Encode());
      });
      break;
    }
    case ChangeState::kNewOnly: {
      {
        MutexLock lock(&mu_);
        phase_ = "cleanup";
      }
      ChangeRecord next = *rec;
      next.state = ChangeState::kDone;
      next.finished_ms = WallMs();
      next.client_errors =
          std::max<int64_t>(0, SumClientErrors(*map) - rec->client_errors_at_start);
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(same_change(cur));
        auto committed = WithChangeCommitted(cur);
        if (!committed.ok()) return committed.status();
        return WithChangeDetail(*committed, next.Encode());
      });
      {
        MutexLock lock(&mu_);
        phase_.clear();
      }
      if (s.ok()) {
        spdlog::info("{} done: {} copies moved in {:.1f} s", Describe(next), next.moved_copies,
                     static_cast<double>(next.finished_ms - next.started_ms) / 1e3);
      }
      break;
    }
    default:
      return;  // failed: waits for resume or cancel
  }
  if (!s.ok() && s.code() != ::shardkv::Status::Code::kAborted) {
    spdlog::warn("{}: stage commit will be retried: {}", Describe(*rec), s.ToString());
  }
}

}  // namespace shardkv::rebalance
