#include "node/metrics_source.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "metrics/node_metrics.h"
#include "node/storage_status.h"
#include "shardkv/stats.h"

namespace shardkv::node {

MetricsSource::MetricsSource(MetricsSourceDeps deps) : d_(deps) {
  d_.maps->AddAfterPublish([this](const ClusterMap*, const ClusterMap& next) { OnPublish(next); });
}

void MetricsSource::OnPublish(const ClusterMap& next) {
  const ChangeRecord* rec = next.change();
  if (rec == nullptr) return;
  common::MutexLock lock(&mu_);
  if (rec->change_id == change_id_) return;
  change_id_ = rec->change_id;
  errors_at_change_ = d_.stats->client_errors();
}

Status MetricsSource::Ready() const {
  const std::string node = "node " + std::to_string(d_.self_id);
  if (!d_.service->ready()) {
    return Status(Status::Code::kUnavailable, Status::Reason::kStarting,
                  node + " is starting (loading its cluster map)");
  }
  // Before the map's verdicts: a node whose storage fails is not ready whatever its map says.
  if (Status storage = StorageReadiness(*d_.storage, d_.self_id); !storage.ok()) return storage;
  auto map = d_.maps->Current();
  if (map == nullptr) return Status::Unavailable(UnformedMessage(d_.self_id));
  const ClusterNode* self = map->FindNode(d_.self_id);
  if (self == nullptr) {
    return Status::Unavailable(node + " is not a member of its cluster map (removed)");
  }
  if (self->state == NodeState::kDown) {
    return Status::Unavailable(node + " is marked down in its cluster map");
  }
  return Status::OK();
}

std::string MetricsSource::Render() {
  metrics::NodeMetricsSnapshot s;
  net::StatsResponse stats = d_.service->StatsSnapshot();
  s.version = stats.info[std::string(stats::version)];
  s.node_id = d_.self_id;
  s.ready = Ready().ok();
  s.counters = std::move(stats.counters);
  s.gauges = std::move(stats.gauges);
  for (size_t op = 0; op < KvService::kOpCount; ++op) {
    const std::string name(KvService::OpName(op));
    for (size_t code = 0; code < NodeStats::kMaxCodes; ++code) {
      const uint64_t n = d_.stats->ResultCount(op, code);
      // "ok" always, so every op's series exists from the start; errors once they happen.
      if (n == 0 && code != 0) continue;
      s.requests.push_back(
          {name, std::string(metrics::ResultLabel(static_cast<Status::Code>(code))), n});
    }
    if (const metrics::Histogram* h = d_.stats->OpLatency(op)) {
      s.latency.push_back({name, h->Snapshot()});
    }
  }
  for (std::string_view property : metrics::RocksIntProperties()) {
    if (auto v = d_.storage->RocksIntProperty(property)) s.rocksdb_int[std::string(property)] = *v;
  }
  s.rocksdb_cfstats = d_.storage->RocksMapProperty(metrics::kRocksCfStatsProperty);
  auto map = d_.maps->Current();
  if (map != nullptr && map->change() != nullptr) {
    s.change = *map->change();
    common::MutexLock lock(&mu_);
    // A change already in the map the node started with: counted from the start (0).
    if (s.change->change_id != change_id_) {
      change_id_ = s.change->change_id;
      errors_at_change_ = 0;
    }
    const uint64_t now = d_.stats->client_errors();
    s.change_client_errors = static_cast<int64_t>(now - std::min(now, errors_at_change_));
  }
  Status rendered;
  std::string text = metrics::RenderNodeMetrics(s, &rendered);
  // A bug in a family, not the scrape's fault: the valid lines are still served.
  if (!rendered.ok()) spdlog::warn("node {}: metrics: {}", d_.self_id, rendered.ToString());
  return text;
}

}  // namespace shardkv::node
