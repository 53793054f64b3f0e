// ChangeDriver, the streaming stage: runs every stream task of a change to completion on a fixed
// pool of worker threads, at most `streams_per_node` at a time per destination (schedule.h), each
// through slices of StreamRange calls to its destination (which pulls, applies, checkpoints and
// keeps to the change's rate with its one limiter; see StreamSink).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <set>

#include "clustermap/cluster_map_builder.h"
#include "rebalance/change_driver.h"
#include "rebalance/schedule.h"

namespace shardkv::rebalance {

Status ChangeDriver::RunStreams(const ClusterMap& map, const ChangeRecord& record) {
  const auto moving = MovingRanges(map);
  const auto tasks = AssignTasks(moving);
  // The plan's per-task counts, from when the change began (never counted again here). The
  // tasks are the plan's (AssignTasks is deterministic for a map); a task the record does not
  // match shows 0 planned rather than another task's figures.
  std::map<uint64_t, const TaskPlan*> planned;
  for (const TaskPlan& p : record.task_plans) planned[p.task_id] = &p;
  std::set<uint32_t> destinations;
  {
    common::MutexLock lock(&mu_);
    tasks_.clear();
    ready_.clear();
    fatal_error_.clear();
    for (const StreamTask& task : tasks) {
      TaskState st;
      st.task = task;
      if (auto it = planned.find(task.id);
          it != planned.end() && it->second->destination == task.destination) {
        st.planned_copies = it->second->copies;
        st.planned_bytes = it->second->bytes;
      }
      destinations.insert(task.destination);
      tasks_.push_back(std::move(st));
    }
    active_change_ = record.change_id;
  }
  const uint32_t rf = map.EffectiveReplicas();
  const uint32_t w = std::min(map.params().write_quorum, rf);
  const uint32_t merge_count = rf - w + 1;
  // A fixed pool, whatever the task count (a change of 200,000 ranges once started a thread per
  // task and died of it). Sized for the streams the change starts with; a later throttle to more
  // streams is capped by it.
  const size_t pool_size = StreamWorkers(tasks.size(), destinations.size(),
                                         std::max<uint32_t>(1, record.streams_per_node));
  std::vector<std::thread> pool;
  Status result;
  try {
    for (size_t i = 0; i < pool_size; ++i) pool.emplace_back([this] { StreamWorker(); });
  } catch (const std::exception& e) {
    result = Status::ResourceExhausted(std::string("starting stream workers: ") + e.what());
  }
  while (result.ok()) {
    {
      common::MutexLock lock(&mu_);
      // Woken as soon as a task ends a call, so a finished slot is refilled at once.
      const auto tick_end = std::chrono::steady_clock::now() + options_.tick;
      while (!stopping_ && !tasks_changed_) {
        if (!lock.WaitUntil(wake_, tick_end)) break;
      }
      tasks_changed_ = false;
      if (stopping_) {
        result = Status::Aborted("node is stopping");
        break;
      }
      if (!fatal_error_.empty()) {
        result = Status::Internal(fatal_error_);
        break;
      }
    }
    auto now_map = maps_->Current();
    auto now_rec = clustermap::RecordOf(now_map.get());
    if (!now_map || !now_map->has_pending() || !now_rec.ok() ||
        now_rec->change_id != record.change_id || now_rec->state != ChangeState::kStreaming ||
        now_map->claimant() != options_.self_id) {
      result = Status::Aborted("the change is no longer streaming here");
      break;
    }
    const uint32_t streams = std::max<uint32_t>(1, now_rec->streams_per_node);
    const auto now = std::chrono::steady_clock::now();
    bool all_done = true;
    std::string failing;
    common::MutexLock lock(&mu_);
    std::vector<TaskSlot> slots(tasks_.size());
    size_t running = 0;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      TaskState& t = tasks_[i];
      slots[i] = {t.task.destination, t.running, t.done, now < t.retry_after};
      running += t.running ? 1 : 0;
      if (t.done) continue;
      all_done = false;
      if (t.failing_since != std::chrono::steady_clock::time_point() &&
          now - t.failing_since > options_.task_failure_timeout) {
        const TokenRange& first = t.task.ranges.front();
        failing = "stream task " + std::to_string(t.task.id) + " (" +
                  std::to_string(t.task.ranges.size()) + " ranges from token " +
                  std::to_string(first.first) + ") to node " + std::to_string(t.task.destination) +
                  ": " + t.last_error;
      }
    }
    if (all_done) break;
    if (!failing.empty()) {
      result = Status::Unavailable(failing);
      break;
    }
    const size_t free_workers = pool.size() > running ? pool.size() - running : 0;
    for (size_t i : PickTasksToStart(slots, streams, free_workers)) {
      TaskState& t = tasks_[i];
      t.running = slots[i].running = true;
      ready_.emplace_back([this, i, now_map, change = record.change_id, merge_count] {
        RunTask(i, *now_map, change, merge_count);
      });
    }
    task_wake_.notify_all();
  }
  {
    common::MutexLock lock(&mu_);
    stopping_tasks_ = true;
    ready_.clear();
  }
  task_wake_.notify_all();
  for (auto& t : pool) t.join();
  common::MutexLock lock(&mu_);
  for (TaskState& t : tasks_) t.running = false;  // those still queued when it stopped
  stopping_tasks_ = false;
  return result;
}

void ChangeDriver::StreamWorker() {
  for (;;) {
    std::function<void()> job;
    {
      common::MutexLock lock(&mu_);
      while (!stopping_tasks_ && !stopping_ && ready_.empty()) lock.Wait(task_wake_);
      if (stopping_tasks_ || stopping_) return;
      job = std::move(ready_.front());
      ready_.pop_front();
    }
    try {
      job();
    } catch (const std::exception& e) {
      // Nothing may throw across the drive; if something does, the change fails with it.
      common::MutexLock lock(&mu_);
      fatal_error_ = std::string("stream worker: ") + e.what();
      tasks_changed_ = true;
      wake_.notify_all();
    }
  }
}

void ChangeDriver::RunTask(size_t index, const ClusterMap& map, uint64_t change_id,
                           uint32_t merge_count) {
  StreamTask task;
  {
    common::MutexLock lock(&mu_);
    task = tasks_[index].task;
  }
  const ClusterNode* dst = map.FindNode(task.destination);
  net::StreamRangeRequest req;
  req.change_id = change_id;
  req.task_id = task.id;
  req.first = task.ranges.front().first;
  req.last = task.ranges.back().last;
  if (task.ranges.size() > 1) {
    req.ranges.reserve(task.ranges.size());
    for (const TokenRange& r : task.ranges) req.ranges.push_back({r.first, r.last});
  }
  for (uint32_t id : task.sources) {
    const ClusterNode* n = map.FindNode(id);
    std::string address = n ? n->address : std::string();
    if (options_.source_refusal) {
      if (Status refused = options_.source_refusal(id); !refused.ok()) {
        // An empty address: the destination pulls nothing from it (merges from the others).
        spdlog::warn("stream task {}: node {} is no source: {}", task.id, id, refused.ToString());
        address.clear();
      }
    }
    req.source_ids.push_back(id);
    req.source_addresses.push_back(std::move(address));
  }
  req.merge_count = merge_count;
  req.slice_ms = options_.slice_ms;
  auto at_start = clustermap::RecordOf(map);
  const uint64_t map_rate = at_start.ok() ? at_start->rate_bytes_per_s : 0;
  for (;;) {
    {
      common::MutexLock lock(&mu_);
      if (stopping_ || stopping_tasks_) break;
    }
    // The destination's whole budget, as the record has it now (a throttle applies at the next
    // slice): the destination's one limiter shares it among every task streaming into it.
    auto now_map = maps_->Current();
    auto now_rec = clustermap::RecordOf(now_map.get());
    req.rate_bytes_per_s =
        now_rec.ok() && now_rec->change_id == change_id ? now_rec->rate_bytes_per_s : map_rate;
    net::Request request;
    request.epoch = map.epoch();
    request.cluster_id = map.cluster_id();
    request.body = req;
    auto reply =
        dst == nullptr
            ? StatusOr<net::Response>(Status::NotFound("not in the map"))
            : peers_->CallSync(dst->address, std::move(request),
                               std::chrono::milliseconds(options_.slice_ms) + options_.rpc_timeout);
    Status s = reply.ok() ? reply->status() : reply.status();
    const auto* body = s.ok() ? std::get_if<net::StreamRangeResponse>(&reply->body) : nullptr;
    if (s.ok() && body == nullptr) s = Status::Corruption("unexpected stream reply");
    common::MutexLock lock(&mu_);
    TaskState& t = tasks_[index];
    if (!s.ok()) {
      ++task_errors_;
      t.had_error = true;
      t.last_error = "node " + std::to_string(task.destination) + ": " + s.ToString();
      if (t.failing_since == std::chrono::steady_clock::time_point()) {
        t.failing_since = std::chrono::steady_clock::now();
      }
      t.retry_after = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
      spdlog::debug("stream task {} failed: {}", task.id, t.last_error);
      break;
    }
    t.failing_since = {};
    // Its checkpoint was there when this driver first asked (a takeover), or after a failed
    // call (the destination or its source restarted): the task continued, not started over.
    if ((t.calls == 0 || t.had_error) && body->resumed) {
      t.resumed = true;
      if (t.calls == 0) t.resumed_copies = body->copies;
    }
    ++t.calls;
    t.had_error = false;
    t.copies = body->copies;
    t.tombstones = body->tombstones;
    t.bytes = body->bytes;
    t.ranges_done = body->ranges_done;
    t.copies_during_change = body->copies_during_change;
    if (body->done) {
      t.done = true;
      t.ranges_done = t.task.ranges.size();
      break;
    }
  }
  common::MutexLock lock(&mu_);
  tasks_[index].running = false;
  tasks_changed_ = true;
  wake_.notify_all();
}

}  // namespace shardkv::rebalance
