// Rebalancer, the streaming stage: runs every stream task of a change to completion, at most
// `streams_per_node` at a time per destination and per source, each through slices of
// StreamRange calls to its destination (which pulls, applies and checkpoints; see StreamSink).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "rebalance/rebalancer.h"

namespace shardkv::rebalance {

::shardkv::Status Rebalancer::RunStreams(const ClusterMap& map, const ChangeRecord& record) {
  const auto moving = MovingRanges(map);
  const auto tasks = AssignTasks(moving);
  // Totals up front: count each task's range once (on a live old replica).
  std::vector<MovingRange> task_ranges;
  task_ranges.reserve(tasks.size());
  for (const StreamTask& t : tasks) task_ranges.push_back({t.range, t.sources, {}});
  auto counts = CountRanges(map, task_ranges);
  {
    std::lock_guard lock(mu_);
    tasks_.clear();
    for (size_t i = 0; i < tasks.size(); ++i) {
      TaskState st;
      st.task = tasks[i];
      if (counts.ok()) {
        st.planned_copies = (*counts)[i].live;
        st.planned_bytes = (*counts)[i].bytes;
      }
      tasks_.push_back(std::move(st));
    }
    active_change_ = record.change_id;
    streams_started_ = std::chrono::steady_clock::now();
  }
  const uint32_t rf = map.EffectiveReplicas();
  const uint32_t w = std::min(map.params().write_quorum, rf);
  const uint32_t merge_count = rf - w + 1;
  std::vector<std::thread> running;
  ::shardkv::Status result;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      // Woken as soon as a task ends a call, so a finished slot is refilled at once.
      wake_.wait_for(lock, options_.tick, [&] { return stopping_ || tasks_changed_; });
      tasks_changed_ = false;
      if (stopping_) {
        result = ::shardkv::Status::Aborted("node is stopping");
        break;
      }
    }
    auto now_map = maps_->Current();
    auto now_rec = ChangeRecord::Decode(now_map ? now_map->change_detail() : std::string());
    if (!now_map || !now_map->has_pending() || !now_rec.ok() ||
        now_rec->change_id != record.change_id || now_rec->state != ChangeState::kStreaming ||
        now_map->claimant() != options_.self_id) {
      result = ::shardkv::Status::Aborted("the change is no longer streaming here");
      break;
    }
    const uint32_t streams = std::max<uint32_t>(1, now_rec->streams_per_node);
    const uint64_t rate = now_rec->rate_bytes_per_s / streams;
    const auto now = std::chrono::steady_clock::now();
    bool all_done = true;
    std::string failing;
    std::lock_guard lock(mu_);
    std::map<uint32_t, uint32_t> busy_dst, busy_src;
    for (const TaskState& t : tasks_) {
      if (!t.running) continue;
      ++busy_dst[t.task.destination];
      ++busy_src[t.task.sources[0]];
    }
    for (size_t i = 0; i < tasks_.size(); ++i) {
      TaskState& t = tasks_[i];
      if (t.done) continue;
      all_done = false;
      if (t.failing_since != std::chrono::steady_clock::time_point() &&
          now - t.failing_since > options_.task_failure_timeout) {
        failing = "stream of tokens " + std::to_string(t.task.range.first) + ".." +
                  std::to_string(t.task.range.last) + " to node " +
                  std::to_string(t.task.destination) + ": " + t.last_error;
      }
      if (t.running || now < t.retry_after) continue;
      if (busy_dst[t.task.destination] >= streams || busy_src[t.task.sources[0]] >= streams) {
        continue;
      }
      ++busy_dst[t.task.destination];
      ++busy_src[t.task.sources[0]];
      t.running = true;
      running.emplace_back([this, i, now_map, change = record.change_id, rate, merge_count] {
        RunTask(i, *now_map, change, rate, merge_count);
      });
    }
    if (all_done) break;
    if (!failing.empty()) {
      result = ::shardkv::Status::Unavailable(failing);
      break;
    }
  }
  {
    std::lock_guard lock(mu_);
    stopping_tasks_ = true;
  }
  for (auto& t : running) t.join();
  std::lock_guard lock(mu_);
  stopping_tasks_ = false;
  return result;
}

void Rebalancer::RunTask(size_t index, const ClusterMap& map, uint64_t change_id, uint64_t rate,
                         uint32_t merge_count) {
  StreamTask task;
  {
    std::lock_guard lock(mu_);
    task = tasks_[index].task;
  }
  const ClusterNode* dst = map.FindNode(task.destination);
  net::StreamRangeRequest req;
  req.change_id = change_id;
  req.task_id = task.id;
  req.first = task.range.first;
  req.last = task.range.last;
  for (uint32_t id : task.sources) {
    const ClusterNode* n = map.FindNode(id);
    req.source_ids.push_back(id);
    req.source_addresses.push_back(n ? n->address : std::string());
  }
  req.merge_count = merge_count;
  req.rate_bytes_per_s = rate;
  req.slice_ms = options_.slice_ms;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_ || stopping_tasks_) break;
    }
    net::Request request;
    request.epoch = map.epoch();
    request.cluster_id = map.cluster_id();
    request.body = req;
    auto reply =
        peers_->CallSync(dst->address, std::move(request),
                         std::chrono::milliseconds(options_.slice_ms) + options_.rpc_timeout);
    ::shardkv::Status s = reply.ok() ? reply->status() : reply.status();
    const auto* body = s.ok() ? std::get_if<net::StreamRangeResponse>(&reply->body) : nullptr;
    if (s.ok() && body == nullptr) s = ::shardkv::Status::Corruption("unexpected stream reply");
    std::lock_guard lock(mu_);
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
    if ((t.calls == 0 || t.had_error) && body->resumed) t.resumed = true;
    ++t.calls;
    t.had_error = false;
    t.copies = body->copies;
    t.tombstones = body->tombstones;
    t.bytes = body->bytes;
    if (body->done) {
      t.done = true;
      break;
    }
  }
  std::lock_guard lock(mu_);
  tasks_[index].running = false;
  tasks_changed_ = true;
  wake_.notify_all();
}

}  // namespace shardkv::rebalance
