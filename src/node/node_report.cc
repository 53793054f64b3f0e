// Node::Impl's part of the stats reply (node::NodeReport): what KvService cannot know itself.
#include <string>
#include <utility>

#include "node/node_impl.h"

namespace shardkv {

std::string Node::Impl::RedisAddress() const {
  if (redis_port_.load() == 0) return "";
  std::string host;
  uint16_t unused = 0;
  (void)node::ParseHostPort(options_.redis_listen, "--redis-listen", &host, &unused);
  return RedisHost(host) + ":" + std::to_string(redis_port_.load());
}

std::string Node::Impl::MetricsAddress() const {
  if (!metrics_server_) return std::string();
  const bool v6 = metrics_host_.find(':') != std::string::npos;
  return (v6 ? "[" + metrics_host_ + "]" : metrics_host_) + ":" + std::to_string(metrics_port());
}

void Node::Impl::AddStats(net::StatsResponse* out) {
  out->info[std::string(stats::address)] = address();
  if (std::string redis = RedisAddress(); !redis.empty()) {
    out->info[std::string(stats::redis_address)] = std::move(redis);
  }
  // Absent without a metrics listener (every info value reported is non-empty).
  if (std::string metrics = MetricsAddress(); !metrics.empty()) {
    out->info[std::string(stats::metrics_address)] = std::move(metrics);
  }
  const net::Server::Stats server = server_->stats();
  out->counters[std::string(stats::connections)] = static_cast<int64_t>(server.open_connections);
  out->counters[std::string(stats::connections_total)] =
      static_cast<int64_t>(server.accepted_connections);
  out->counters[std::string(stats::bad_frames)] = static_cast<int64_t>(server.bad_frames);
  rebalancer_->AddCounters(&out->counters);
  out->counters[std::string(stats::stream_tasks_resumed)] =
      static_cast<int64_t>(stream_sink_->resumed_tasks());
  out->counters[std::string(stats::stream_entries_pulled)] =
      static_cast<int64_t>(stream_sink_->entries_pulled());
  out->counters[std::string(stats::ranges_dropped)] =
      static_cast<int64_t>(reconciler_->ranges_dropped());
  repair_service_->AddCounters(&out->counters);
  out->counters[std::string(stats::repair_background)] = repair_scheduler_ ? 1 : 0;
  out->counters[std::string(stats::repair_period_ms)] =
      static_cast<int64_t>(EffectiveRepairPeriodMs(options_));
  out->counters[std::string(stats::repair_passes)] = 0;
  out->counters[std::string(stats::repair_last_full_ms)] = 0;
  if (repair_scheduler_) repair_scheduler_->AddCounters(&out->counters);
  const cluster::ClockVerdict clock = membership_->Clock();
  out->counters[std::string(stats::clock_skewed)] = clock.skewed ? 1 : 0;
  out->counters[std::string(stats::clock_offset_ms)] = clock.offset_ms;
  auto applied = consensus_ ? consensus_->Applied() : nullptr;
  out->counters[std::string(stats::consensus_leader_id)] = consensus_ ? consensus_->LeaderId() : 0;
  out->counters[std::string(stats::consensus_is_leader)] =
      consensus_ && consensus_->IsLeader() ? 1 : 0;
  out->counters[std::string(stats::consensus_voters)] =
      consensus_ ? static_cast<int64_t>(consensus_->Voters().size()) : 0;
  out->counters[std::string(stats::consensus_fenced)] =
      consensus_ && !consensus_->Fence().ok() ? 1 : 0;
  out->counters[std::string(stats::consensus_applied_epoch)] =
      applied ? static_cast<int64_t>(applied->epoch()) : 0;
  // The Redis listener's connections, apart from `connections` (the shardkv protocol's).
  // redis_port_ is set once redis_ has started, so reading redis_ after it is safe.
  const redis::ServerCounters* redis = redis_port_.load() != 0 ? &redis_->counters() : nullptr;
  out->counters[std::string(stats::redis_connections)] =
      redis ? static_cast<int64_t>(redis->connected_clients.load()) : 0;
  out->counters[std::string(stats::redis_connections_total)] =
      redis ? static_cast<int64_t>(redis->connections_received.load()) : 0;
  out->counters[std::string(stats::redis_connections_rejected)] =
      redis ? static_cast<int64_t>(redis->rejected_connections.load()) : 0;
  const cluster::ConsensusReport report =
      consensus_ ? consensus_->Report() : cluster::ConsensusReport{};
  out->counters[std::string(stats::consensus_store_errors)] =
      static_cast<int64_t>(report.store_errors);
  out->counters[std::string(stats::consensus_recoveries)] = static_cast<int64_t>(report.recoveries);
  out->counters[std::string(stats::consensus_changes_given_up)] =
      static_cast<int64_t>(report.changes_given_up);
  // Tombstone GC waiting for a repair with every replica (design.md "The GC rule").
  const rebalance::GcHorizon::Blocked blocking = GcBlocking();
  out->counters[std::string(stats::gc_blocked_ranges)] = static_cast<int64_t>(blocking.ranges);
  out->counters[std::string(stats::gc_kept_unrepaired)] =
      static_cast<int64_t>(storage_->TombstonesKeptUnrepaired());
  std::string waiting;
  for (uint32_t id : blocking.waiting_for) {
    waiting += (waiting.empty() ? "" : ",") + std::to_string(id);
  }
  if (!waiting.empty()) out->info[std::string(stats::gc_blocked_by)] = waiting;
  if (consensus_) {
    std::string voters;
    for (uint32_t id : report.voters) voters += (voters.empty() ? "" : ",") + std::to_string(id);
    const std::pair<std::string_view, const std::string*> values[] = {
        {stats::consensus_voter_ids, &voters},
        {stats::consensus_pending_change, &report.pending_change},
        {stats::consensus_given_up, &report.given_up},
        {stats::consensus_store_error, &report.store_error}};
    for (const auto& [name, value] : values) {
      if (!value->empty()) out->info[std::string(name)] = *value;  // absent when there is none
    }
  }
}

}  // namespace shardkv
