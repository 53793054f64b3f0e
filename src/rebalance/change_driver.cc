// ChangeDriver (change_driver.h): the drive loop, takeover and the stage commits. The streaming
// stage is in change_driver_streams.cc.
#include "rebalance/change_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "clustermap/cluster_map_builder.h"
#include "rebalance/change_text.h"

namespace shardkv::rebalance {
namespace {

// OK while `cur` still has change `change` pending: a stage commit of a change that ended
// meanwhile (cancelled, or finished by another driver) is Aborted, never applied to the next.
Status SameChange(const ClusterMap& cur, uint64_t change) {
  auto r = clustermap::RecordOf(cur);
  if (!cur.has_pending() || !r.ok() || r->change_id != change) {
    return Status::Aborted("the change ended meanwhile");
  }
  return Status::OK();
}

}  // namespace

ChangeDriver::ChangeDriver(RebalancerOptions options, cluster::MapStore* maps, net::PeerPool* peers,
                           cluster::Membership* membership, cluster::MapCommitter* committer,
                           ChangePlanner* planner)
    : options_(options),
      maps_(maps),
      peers_(peers),
      membership_(membership),
      committer_(committer),
      planner_(planner) {}

ChangeDriver::~ChangeDriver() { Stop(); }

void ChangeDriver::Start() {
  drive_thread_ = std::thread([this] { DriveLoop(); });
}

void ChangeDriver::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  task_wake_.notify_all();
  if (drive_thread_.joinable()) drive_thread_.join();
}

void ChangeDriver::Wake() { wake_.notify_all(); }

void ChangeDriver::FillMoved(ChangeRecord* rec) const {
  common::MutexLock lock(&mu_);
  FillMovedLocked(rec);
}

void ChangeDriver::AddProgress(ChangeReport* report) const {
  auto map = maps_->Current();
  const ChangeRecord* rec = &report->record;
  const bool pending = map && map->has_pending();
  common::MutexLock lock(&mu_);
  if (pending && rec->state == ChangeState::kNewOnly && committing_) {
    report->record.state = *committing_;
  }
  // Live progress from this driver's tasks while streaming, and while failed (a failed change
  // keeps what it moved; the record has the same counts, committed when it failed).
  const bool live = pending && active_change_ == rec->change_id &&
                    (rec->state == ChangeState::kStreaming || rec->state == ChangeState::kFailed);
  if (!live) {
    report->copies_done = rec->moved_copies;
    report->tombstones_done = rec->moved_tombstones;
    report->bytes_done = rec->moved_bytes;
    report->copies_during_change = rec->moved_during_change;
    return;
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
    report->copies_during_change += t.copies_during_change;
    p.copies_planned += t.planned_copies;
    p.bytes_planned += t.planned_bytes;
    p.copies_done += t.copies;
    p.bytes_done += t.bytes;
    report->copies_done += t.copies;
    report->tombstones_done += t.tombstones;
    report->bytes_done += t.bytes;
  }
  for (auto& [k, p] : pairs) report->streams.push_back(p);
}

bool ChangeDriver::IsDriver(const ClusterMap& map) const {
  if (options_.consensus != nullptr && options_.consensus->running()) {
    // The Raft leader drives; a new leader takes the change over (claimant is not itself).
    return options_.consensus->IsLeader() && map.FindNode(options_.self_id) != nullptr;
  }
  if (map.claimant() == options_.self_id) return true;
  if (!membership_->Settled() || membership_->IsAlive(map.claimant())) return false;
  for (const ClusterNode& n : map.nodes()) {
    if (n.id < options_.self_id && membership_->IsAlive(n.id)) return false;
  }
  return map.FindNode(options_.self_id) != nullptr;
}

void ChangeDriver::DriveLoop() {
  for (;;) {
    {
      common::MutexLock lock(&mu_);
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
    auto rec = clustermap::RecordOf(map.get());
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

void ChangeDriver::FillMovedLocked(ChangeRecord* rec) const {
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

void ChangeDriver::FailChange(uint64_t change_id, const std::string& reason,
                              uint32_t failed_driver) {
  Status s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
    auto r = clustermap::RecordOf(cur);
    if (!cur.has_pending() || !r.ok() || r->change_id != change_id) {
      return Status::Aborted("the change ended meanwhile");
    }
    ChangeRecord next = *r;
    {
      common::MutexLock lock(&mu_);
      FillMovedLocked(&next);
    }
    next.state = ChangeState::kFailed;
    next.error = reason;
    next.failed_driver = failed_driver;
    return clustermap::WithChange(cur, next);
  });
  if (!s.ok()) spdlog::warn("marking change {} failed: {}", change_id, s.ToString());
}

Status ChangeDriver::HandOff() {
  auto map = maps_->Current();
  if (!map || !map->has_pending() || map->claimant() != options_.self_id) return Status::OK();
  auto rec = clustermap::RecordOf(*map);
  if (!rec.ok() || rec->state != ChangeState::kStreaming) return Status::OK();
  const uint64_t change = rec->change_id;
  Status s = Commit(
      [&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(SameChange(cur, change));
        auto r = clustermap::RecordOf(cur);
        if (r->state != ChangeState::kStreaming || cur.claimant() != options_.self_id) {
          return Status::Aborted("no longer streaming here");
        }
        ChangeRecord next = *r;
        next.handed_off_by = options_.self_id;
        return clustermap::WithChange(cur, next);
      },
      cluster::MapCommitter::Acks::kSkip);
  if (s.ok()) spdlog::info("{}: handed on as node {} stops", Describe(*rec), options_.self_id);
  return s;
}

bool ChangeDriver::Answers(const ClusterMap& map, uint32_t id) {
  const ClusterNode* node = map.FindNode(id);
  if (node == nullptr) return false;
  net::Request req;
  req.body = net::PingRequest{};
  auto reply = peers_->CallSync(node->address, std::move(req), std::chrono::milliseconds(1500));
  return reply.ok() && reply->ok();
}

void ChangeDriver::TakeOver(const ClusterMap& map, const ChangeRecord& rec) {
  const uint64_t change = rec.change_id;
  const uint32_t dead = map.claimant();
  const bool handed = rec.handed_off_by != 0 && rec.handed_off_by == dead;
  // Leadership also moves from a driver that lives (CPU-starved past its heartbeats while it
  // planned 100,000 vnodes, seen in CI): a driver that still answers did not die, and its
  // streams resume from their checkpoints all the same. A crashed or frozen one does not answer.
  const bool alive = !handed && rec.state == ChangeState::kStreaming && Answers(map, dead);
  if (handed) {
    spdlog::info("node {} takes over {}, handed on by node {} as it stopped", options_.self_id,
                 Describe(rec), dead);
  } else if (alive) {
    spdlog::info("node {} takes over {} from node {}, which lost leadership but answers",
                 options_.self_id, Describe(rec), dead);
  } else {
    spdlog::warn("claimant node {} is down; node {} takes over {}", dead, options_.self_id,
                 Describe(rec));
  }
  static_cast<void>(Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
    SHARDKV_RETURN_IF_ERROR(SameChange(cur, change));
    auto r = clustermap::RecordOf(cur);
    ChangeRecord next = *r;
    next.handed_off_by = 0;
    // A graceful stop handed the change on, or the driver lives: not a death, so not counted.
    if ((handed && r->handed_off_by == dead) || alive) return clustermap::WithChange(cur, next);
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
    return clustermap::WithChange(cur, next);
  }));
}

void ChangeDriver::DriveOnce() {
  auto map = maps_->Current();
  if (!map || !map->has_pending()) return;
  auto rec = clustermap::RecordOf(*map);
  if (!rec.ok() || !IsDriver(*map)) return;
  const uint64_t change = rec->change_id;
  if (map->claimant() != options_.self_id) return TakeOver(*map, *rec);
  Status s;
  switch (rec->state) {
    case ChangeState::kStreaming: {
      Status streamed = RunStreams(*map, *rec);
      if (streamed.code() == Status::Code::kAborted) return;  // cancelled, stopped
      ChangeRecord next = *rec;
      {
        // A failed change keeps what it moved, so `status` does not report 0.
        common::MutexLock lock(&mu_);
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
        SHARDKV_RETURN_IF_ERROR(SameChange(cur, change));
        auto r = clustermap::RecordOf(cur);
        // Settings changed meanwhile (throttle) are kept: only the outcome is ours.
        ChangeRecord merged = next;
        merged.rate_bytes_per_s = r->rate_bytes_per_s;
        merged.streams_per_node = r->streams_per_node;
        merged.takeovers = r->takeovers;
        return clustermap::WithChange(cur, merged);  // read_new: the state is the stage
      });
      break;
    }
    case ChangeState::kReadNew: {
      ChangeRecord next = *rec;
      next.state = ChangeState::kNewOnly;
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(SameChange(cur, change));
        return clustermap::WithChange(cur, next);
      });
      break;
    }
    case ChangeState::kNewOnly: {
      {
        common::MutexLock lock(&mu_);
        committing_ = ChangeState::kCleanup;
      }
      ChangeRecord next = *rec;
      next.state = ChangeState::kDone;
      next.finished_ms = WallMs();
      next.client_errors =
          std::max<int64_t>(0, planner_->SumClientErrors(*map) - rec->client_errors_at_start);
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(SameChange(cur, change));
        auto committed = clustermap::WithChangeCommitted(cur);
        if (!committed.ok()) return committed.status();
        return clustermap::WithChange(*committed, next);
      });
      {
        common::MutexLock lock(&mu_);
        committing_.reset();
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
  if (!s.ok() && s.code() != Status::Code::kAborted) {
    spdlog::warn("{}: stage commit will be retried: {}", Describe(*rec), s.ToString());
  }
}

}  // namespace shardkv::rebalance
