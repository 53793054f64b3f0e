// The node's metric families: what `GET /metrics` reports, rendered from one snapshot of the
// same sources `shardkv stats` reads (the stats reply's counters and gauges, named in
// shardkv/stats.h), plus what stats has no room for: requests by op and result, per-op latency
// histograms, RocksDB's compaction and stall figures, and the membership change's record.
//
// Names follow Prometheus's conventions: the shardkv_ prefix, base units (seconds, bytes),
// _total on counters. StatExports() is the one table from a stats name to its metric, so a stat
// added to stats.h without a decision here fails tests/metrics/node_metrics_test.cc.
//
// Thread-safety: functions of values only.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/exposition_writer.h"
#include "shardkv/change.h"

namespace shardkv::metrics {

struct OpResultCount {
  std::string op;
  std::string result;  // "ok", or the error code in snake_case ("unavailable", ...)
  uint64_t count = 0;
};

struct OpLatency {
  std::string op;
  HistogramSnapshot histogram;
};

struct NodeMetricsSnapshot {
  std::string version;
  uint32_t node_id = 0;
  bool ready = false;
  // The stats reply (names of shardkv/stats.h).
  std::map<std::string, int64_t> counters;
  std::map<std::string, double> gauges;
  std::vector<OpResultCount> requests;
  std::vector<OpLatency> latency;
  // RocksDB (data column family): integer properties by name ("rocksdb.num-running-compactions")
  // and the "rocksdb.cfstats" map; a missing one is left out of the scrape.
  std::map<std::string, uint64_t> rocksdb_int;
  std::map<std::string, std::string> rocksdb_cfstats;
  // The newest change the node's map records (none if the cluster never had one), and this
  // node's client errors since it first saw that change.
  std::optional<ChangeRecord> change;
  int64_t change_client_errors = 0;
};

// A stats name's metric: its Prometheus name and type; `scale` converts to base units.
struct StatExport {
  std::string_view stat;
  std::string_view metric;
  MetricType type;
  std::string_view help;
  double scale = 1;
};
std::span<const StatExport> StatExports();
// Stats left out of the metrics on purpose, each with the reason in node_metrics.cc.
std::span<const std::string_view> SkippedStats();

// Renders the snapshot. `status` (optional) receives the writer's status: a non-OK one is a bug
// in a family (the rest of the scrape is still served).
std::string RenderNodeMetrics(const NodeMetricsSnapshot& s, Status* status = nullptr);

// The RocksDB integer properties the scrape reports (the keys of rocksdb_int it reads), and the
// map property rocksdb_cfstats comes from.
std::vector<std::string_view> RocksIntProperties();
inline constexpr std::string_view kRocksCfStatsProperty = "rocksdb.cfstats";

// The result label of a status code ("ok", "not_found", "unavailable", ...).
std::string_view ResultLabel(Status::Code code);

}  // namespace shardkv::metrics
