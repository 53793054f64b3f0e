#include "metrics/node_metrics.h"

#include <array>
#include <cstdlib>

namespace shardkv::metrics {
namespace {

constexpr auto kCounter = MetricType::kCounter;
constexpr auto kGauge = MetricType::kGauge;

constexpr std::array kStatExports = {
    StatExport{"node_id", "shardkv_node_id", kGauge, "The node's id."},
    StatExport{"uptime_s", "shardkv_uptime_seconds", kGauge, "Seconds since the node started."},
    StatExport{"client_errors", "shardkv_client_errors_total", kCounter,
               "Failed client get/put/delete requests and batches (not NotFound, StaleEpoch or "
               "Timeout)."},
    StatExport{"connections", "shardkv_connections", kGauge,
               "Open client and peer connections of the shardkv protocol (Redis's are "
               "shardkv_redis_connections)."},
    StatExport{"connections_total", "shardkv_connections_accepted_total", kCounter,
               "Connections of the shardkv protocol accepted since the node started."},
    StatExport{"redis_connections", "shardkv_redis_connections", kGauge,
               "Open connections to the Redis listener (0 without one)."},
    StatExport{"redis_connections_total", "shardkv_redis_connections_accepted_total", kCounter,
               "Redis connections accepted since the node started."},
    StatExport{"redis_connections_rejected", "shardkv_redis_connections_rejected_total", kCounter,
               "Redis connections refused because the listener was at its connection limit."},
    StatExport{"bad_frames", "shardkv_bad_frames_total", kCounter,
               "Frames refused as malformed or oversized."},
    StatExport{"quorum_failures", "shardkv_quorum_failures_total", kCounter,
               "Operations this node coordinated that missed their quorum."},
    StatExport{"read_repairs", "shardkv_read_repairs_total", kCounter,
               "Stale replicas repaired by a read."},
    StatExport{"hints_written", "shardkv_hints_written_total", kCounter,
               "Hinted-handoff writes stored for unreachable replicas."},
    StatExport{"hints_not_written", "shardkv_hints_not_written_total", kCounter,
               "Replica misses of writes that were not acknowledged, never hinted."},
    StatExport{"hints_pending", "shardkv_hints_pending", kGauge, "Hints not yet delivered."},
    StatExport{"hints_replayed", "shardkv_hints_replayed_total", kCounter, "Hints delivered."},
    StatExport{"hints_expired", "shardkv_hints_expired_total", kCounter,
               "Hints dropped after the tombstone grace."},
    StatExport{"hints_discarded", "shardkv_hints_discarded_total", kCounter,
               "Hints deleted unsent because their target left the cluster."},
    StatExport{"stale_epoch_replies", "shardkv_stale_epoch_replies_total", kCounter,
               "Requests refused because the sender's cluster map was older."},
    StatExport{"redriven", "shardkv_redriven_operations_total", kCounter,
               "Operations re-driven after a cluster map change."},
    StatExport{"writes_restamped", "shardkv_writes_restamped_total", kCounter,
               "Writes re-stamped because a replica held a newer version of the key."},
    StatExport{"requests_late", "shardkv_requests_late_total", kCounter,
               "Client requests dropped unserved: they arrived past their client's deadline."},
    StatExport{"requests_sent_on", "shardkv_requests_sent_on_total", kCounter,
               "Client requests sent on to a node whose clock agrees (this node's is off)."},
    StatExport{"rebalance_commits", "shardkv_rebalance_commits_total", kCounter,
               "Cluster maps this node committed as the driver of a change."},
    StatExport{"rebalance_task_errors", "shardkv_rebalance_task_errors_total", kCounter,
               "Failed stream task calls while driving a change."},
    StatExport{"rebalance_plans_counted", "shardkv_rebalance_plans_counted_total", kCounter,
               "Change plans this node counted."},
    StatExport{"stream_tasks_resumed", "shardkv_stream_tasks_resumed_total", kCounter,
               "Stream tasks continued from a checkpoint on this node."},
    StatExport{"stream_entries_pulled", "shardkv_stream_entries_pulled_total", kCounter,
               "Entries (copies and tombstones) this node pulled as a stream destination."},
    StatExport{"ranges_dropped", "shardkv_ranges_dropped_total", kCounter,
               "Token ranges dropped after a change moved them away."},
    StatExport{"clock_skewed", "shardkv_clock_skewed", kGauge,
               "1 while this node's clock is off a majority's; it sends client requests on."},
    StatExport{"clock_offset_ms", "shardkv_clock_offset_seconds", kGauge,
               "This node's clock minus the other members' (median of the gossip samples).", 1e-3},
    StatExport{"consensus_leader_id", "shardkv_consensus_leader_id", kGauge,
               "The map consensus leader this node knows (0: none)."},
    StatExport{"consensus_is_leader", "shardkv_consensus_leader", kGauge,
               "1 while this node leads the map consensus."},
    StatExport{"consensus_voters", "shardkv_consensus_voters", kGauge,
               "Voters in the map consensus configuration this node knows."},
    StatExport{"consensus_fenced", "shardkv_consensus_fenced", kGauge,
               "1 while this node does not coordinate: it heard no leader for the lease."},
    StatExport{"consensus_applied_epoch", "shardkv_consensus_applied_epoch", kGauge,
               "Epoch of the newest cluster map the consensus applied on this node."},
    StatExport{"consensus_store_errors", "shardkv_consensus_store_errors_total", kCounter,
               "Raft log store writes that failed on this node (a full disk)."},
    StatExport{"consensus_recoveries", "shardkv_consensus_recoveries_total", kCounter,
               "Times this node's Raft server started again after a store error."},
    StatExport{"consensus_changes_given_up", "shardkv_consensus_changes_given_up_total", kCounter,
               "Voter changes this node gave up as leader (deadline passed, or not caught up)."},
    StatExport{"epoch", "shardkv_cluster_map_epoch", kGauge,
               "Epoch of the node's cluster map (0 while unformed)."},
    StatExport{"formed", "shardkv_formed", kGauge,
               "1 once the node is in a cluster, 0 while unformed."},
    StatExport{"keys_approx", "shardkv_stored_keys", kGauge,
               "Estimated keys stored (RocksDB estimate, tombstones included)."},
    StatExport{"live_keys", "shardkv_live_keys", kGauge,
               "Keys holding a live value on this node (counted as writes apply; an expired key "
               "stops counting within about a second; each replica counts its copy)."},
    StatExport{"live_keys_expiring", "shardkv_live_keys_expiring", kGauge,
               "Of shardkv_live_keys, the keys with a TTL."},
    StatExport{"live_keys_counted", "shardkv_live_keys_counted", kGauge,
               "1 once shardkv_live_keys covers every record; 0 while a background count (at "
               "start, or of a dropped range) runs and the figure is partial."},
    StatExport{"bytes_approx", "shardkv_stored_bytes", kGauge, "Estimated bytes stored."},
    StatExport{"storage_io_errors", "shardkv_storage_io_errors_total", kCounter,
               "Storage operations that failed with an I/O error."},
    StatExport{"disk_full", "shardkv_disk_full", kGauge,
               "1 while writes fail for lack of space, else 0."},
    StatExport{"storage_failing", "shardkv_storage_failing", kGauge,
               "1 while storage operations fail with I/O errors (a full, read-only or failing "
               "disk): the node coordinates no writes and is not ready, else 0."},
    StatExport{"storage_failures", "shardkv_storage_failures_total", kCounter,
               "Episodes of storage I/O failure since the node started."},
    StatExport{"needs_repair", "shardkv_needs_repair", kGauge,
               "1 while the node needs repair (refuses replica reads and streams), else 0."},
    StatExport{"repair_background", "shardkv_repair_background", kGauge,
               "1 while background anti-entropy runs on this node, else 0."},
    StatExport{"repair_period_ms", "shardkv_repair_period_seconds", kGauge,
               "Background anti-entropy's period: every range this node drives is compared once "
               "within it.",
               1e-3},
    StatExport{"repair_passes", "shardkv_repair_passes_total", kCounter,
               "Background anti-entropy passes completed (every range this node drives visited)."},
    StatExport{"repair_last_full_ms", "shardkv_repair_last_full_pass_timestamp_seconds", kGauge,
               "When the last background pass in which every range was compared (none failed or "
               "skipped) completed, Unix time; 0 if none yet.",
               1e-3},
    StatExport{"repair_ranges_compared", "shardkv_repair_ranges_compared_total", kCounter,
               "Token ranges this node compared with their other replicas (repair commands and "
               "background)."},
    StatExport{"repair_ranges_differed", "shardkv_repair_ranges_differed_total", kCounter,
               "Of those, the ranges whose replicas differed."},
    StatExport{
        "repair_ranges_failed", "shardkv_repair_ranges_failed_total", kCounter,
        "Of those, the ranges not fully repaired: a replica failed, refused, or needs repair."},
    StatExport{"repair_ranges_skipped", "shardkv_repair_ranges_skipped_total", kCounter,
               "Ranges repair skipped because a membership change moves them."},
    StatExport{
        "repair_keys_in", "shardkv_repair_keys_received_total", kCounter,
        "Records repair wrote to this node: newer versions (tombstones included) it lacked."},
    StatExport{"repair_keys_out", "shardkv_repair_keys_sent_total", kCounter,
               "Records this node's repairs wrote to other replicas."},
    StatExport{"repair_tree_bytes", "shardkv_repair_tree_bytes_total", kCounter,
               "Bytes of hash tree queries and replies this node's repairs exchanged with other "
               "replicas."},
    StatExport{"gc_blocked_ranges", "shardkv_gc_blocked_ranges", kGauge,
               "Token ranges held here that have not been repaired with every replica for longer "
               "than the tombstone grace: their tombstones wait (a replica down, or needing "
               "repair)."},
    StatExport{"gc_kept_unrepaired", "shardkv_gc_kept_unrepaired_total", kCounter,
               "Tombstones past the grace that compaction kept because their range was not "
               "repaired with every replica since they were written."},
    StatExport{"gc_waits_for_repair", "shardkv_gc_waits_for_repair", kGauge,
               "1 if this node collects a tombstone only after every replica of its range was "
               "repaired since it was written (the GC rule), 0 if by the tombstone grace alone."},
};

// Stats that have no metric, and why:
// - wall_clock_ms: Prometheus stamps every scrape itself; clock offsets are `cluster status`'s;
// - latency_p50_us, latency_p99_us, latency_p999_us: percentiles cannot be aggregated across
//   nodes; shardkv_request_duration_seconds (a histogram) can, with histogram_quantile();
// - rebuilt_at_ms: a moment, not a measure (an alert wants shardkv_needs_repair); `cluster
//   status` and `stats` show it;
// - gc_waits_since_ms: a moment too (shardkv_gc_waits_for_repair is the measure); a node that
//   needs repair reads it from its peers.
constexpr std::array<std::string_view, 6> kSkipped = {"wall_clock_ms",  "latency_p50_us",
                                                      "latency_p99_us", "latency_p999_us",
                                                      "rebuilt_at_ms",  "gc_waits_since_ms"};

struct RocksInt {
  std::string_view property;
  std::string_view metric;
  std::string_view help;
};
constexpr std::array kRocksInts = {
    RocksInt{"rocksdb.num-running-compactions", "shardkv_rocksdb_running_compactions",
             "Compactions running now."},
    RocksInt{"rocksdb.compaction-pending", "shardkv_rocksdb_compaction_pending",
             "1 if at least one compaction is pending, else 0."},
    RocksInt{"rocksdb.estimate-pending-compaction-bytes",
             "shardkv_rocksdb_pending_compaction_bytes",
             "Estimated bytes compaction must rewrite to bring every level under its target."},
    RocksInt{"rocksdb.num-running-flushes", "shardkv_rocksdb_running_flushes",
             "Memtable flushes running now."},
    RocksInt{"rocksdb.is-write-stopped", "shardkv_rocksdb_write_stopped",
             "1 while RocksDB stops writes (a write stall), else 0."},
    RocksInt{"rocksdb.actual-delayed-write-rate",
             "shardkv_rocksdb_delayed_write_rate_bytes_per_second",
             "The rate (bytes per second) RocksDB slows writes to; 0 when not slowed."},
    RocksInt{"rocksdb.cur-size-all-mem-tables", "shardkv_rocksdb_memtable_bytes",
             "Bytes in the memtables (active and immutable)."},
    RocksInt{"rocksdb.live-sst-files-size", "shardkv_rocksdb_live_sst_bytes",
             "Bytes of the SST files of the current version."},
};

struct RocksMap {
  std::string_view key;  // in the rocksdb.cfstats map
  std::string_view metric;
  std::string_view help;
  double scale;
};
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr std::array kRocksCounters = {
    RocksMap{"compaction.Sum.CompCount", "shardkv_rocksdb_compactions_total",
             "Compactions (and flushes) finished since the node started.", 1},
    RocksMap{"compaction.Sum.CompSec", "shardkv_rocksdb_compaction_seconds_total",
             "Seconds spent compacting (and flushing) since the node started.", 1},
    RocksMap{"compaction.Sum.ReadGB", "shardkv_rocksdb_compaction_read_bytes_total",
             "Bytes read by compactions since the node started (RocksDB reports GiB, 2 decimals).",
             kGiB},
    RocksMap{"compaction.Sum.WriteGB", "shardkv_rocksdb_compaction_written_bytes_total",
             "Bytes written by compactions and flushes since the node started (RocksDB reports "
             "GiB, 2 decimals).",
             kGiB},
    RocksMap{"io_stalls.total_slowdown", "shardkv_rocksdb_write_slowdowns_total",
             "Times RocksDB slowed writes down (write stalls) since the node started.", 1},
    RocksMap{"io_stalls.total_stop", "shardkv_rocksdb_write_stops_total",
             "Times RocksDB stopped writes (write stalls) since the node started.", 1},
};

constexpr std::array kChangeStates = {
    ChangeState::kPlanned, ChangeState::kStreaming, ChangeState::kReadNew, ChangeState::kNewOnly,
    ChangeState::kCleanup, ChangeState::kDone,      ChangeState::kFailed,  ChangeState::kCancelled};

double Scaled(int64_t v, double scale) { return static_cast<double>(v) * scale; }

void WriteChange(const NodeMetricsSnapshot& s, ExpositionWriter& w) {
  const ChangeRecord* rec = s.change ? &*s.change : nullptr;
  w.Family("shardkv_change_state", MetricType::kGauge,
           "1 for the state of the newest membership change this node knows, 0 for the others "
           "(all 0 if the cluster never had one).");
  for (ChangeState state : kChangeStates) {
    w.Sample({{"state", std::string(ChangeStateName(state))}},
             rec != nullptr && rec->state == state ? 1 : 0);
  }
  // A change id is 64 bits; a sample value is a double (53), so the id is a label, exact.
  w.Family("shardkv_change_info", MetricType::kGauge,
           "1, labelled with the id of the newest membership change (no sample if the cluster "
           "never had one).");
  if (rec == nullptr) return;
  w.Sample({{"change_id", std::to_string(rec->change_id)}}, 1);
  auto gauge = [&](std::string_view name, std::string_view help, double value) {
    w.Family(name, MetricType::kGauge, help);
    w.Sample(value);
  };
  gauge("shardkv_change_planned_copies", "Copies the change plans to move (counted at plan).",
        static_cast<double>(rec->planned_copies));
  gauge("shardkv_change_planned_bytes", "Bytes the change plans to move (counted at plan).",
        static_cast<double>(rec->planned_bytes));
  gauge("shardkv_change_moved_copies",
        "Copies the change moved, as recorded in the cluster map (set when streaming ends).",
        static_cast<double>(rec->moved_copies));
  gauge("shardkv_change_moved_bytes",
        "Bytes the change moved, as recorded in the cluster map (set when streaming ends).",
        static_cast<double>(rec->moved_bytes));
  gauge("shardkv_change_stream_rate_limit_bytes_per_second",
        "The change's stream rate limit per destination node, bytes per second.",
        static_cast<double>(rec->rate_bytes_per_s));
  gauge("shardkv_change_client_errors",
        "Client errors on this node since it first saw the change (should stay 0).",
        static_cast<double>(s.change_client_errors));
  const double started = static_cast<double>(rec->started_ms) / 1000.0;
  gauge("shardkv_change_start_time_seconds", "When the change began (Unix time).", started);
  gauge("shardkv_change_end_time_seconds", "When the change ended (Unix time; 0 while it runs).",
        static_cast<double>(rec->finished_ms) / 1000.0);
}

}  // namespace

std::span<const StatExport> StatExports() { return kStatExports; }
std::span<const std::string_view> SkippedStats() { return kSkipped; }

std::vector<std::string_view> RocksIntProperties() {
  std::vector<std::string_view> out;
  for (const RocksInt& r : kRocksInts) out.push_back(r.property);
  return out;
}

std::string_view ResultLabel(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "ok";
    case Status::Code::kNotFound:
      return "not_found";
    case Status::Code::kInvalidArgument:
      return "invalid_argument";
    case Status::Code::kAlreadyExists:
      return "already_exists";
    case Status::Code::kFailedPrecondition:
      return "failed_precondition";
    case Status::Code::kCorruption:
      return "corruption";
    case Status::Code::kIOError:
      return "io_error";
    case Status::Code::kUnavailable:
      return "unavailable";
    case Status::Code::kTimeout:
      return "timeout";
    case Status::Code::kStaleEpoch:
      return "stale_epoch";
    case Status::Code::kResourceExhausted:
      return "resource_exhausted";
    case Status::Code::kAborted:
      return "aborted";
    case Status::Code::kNotSupported:
      return "not_supported";
    case Status::Code::kInternal:
      return "internal";
    case Status::Code::kUnauthenticated:
      return "unauthenticated";
  }
  return "unknown";
}

std::string RenderNodeMetrics(const NodeMetricsSnapshot& s, Status* status) {
  ExpositionWriter w;
  w.Family("shardkv_build_info", MetricType::kGauge,
           "Always 1; the version label is the shardkv release the node runs.");
  w.Sample({{"version", s.version}}, 1);
  w.Family("shardkv_ready", MetricType::kGauge,
           "1 while the node serves (has a map, is a member, is not starting, its storage "
           "works), else 0; the same test as /readyz.");
  w.Sample(s.ready ? 1 : 0);

  for (const StatExport& e : kStatExports) {
    w.Family(e.metric, e.type, e.help);
    if (auto it = s.counters.find(std::string(e.stat)); it != s.counters.end()) {
      w.Sample(Scaled(it->second, e.scale));
    } else if (auto g = s.gauges.find(std::string(e.stat)); g != s.gauges.end()) {
      w.Sample(g->second * e.scale);
    }
  }

  w.Family("shardkv_requests_total", MetricType::kCounter,
           "Requests this node answered, by op and result (the error code; ok for answers, a "
           "get of a missing key included).");
  for (const OpResultCount& r : s.requests) {
    w.Sample({{"op", r.op}, {"result", r.result}}, static_cast<double>(r.count));
  }
  w.Family("shardkv_request_duration_seconds", MetricType::kHistogram,
           "Time from a request's arrival to its answer, by op.");
  for (const OpLatency& l : s.latency) w.Histogram({{"op", l.op}}, l.histogram);

  for (const RocksInt& r : kRocksInts) {
    w.Family(r.metric, MetricType::kGauge, r.help);
    if (auto it = s.rocksdb_int.find(std::string(r.property)); it != s.rocksdb_int.end()) {
      w.Sample(static_cast<double>(it->second));
    }
  }
  for (const RocksMap& r : kRocksCounters) {
    w.Family(r.metric, MetricType::kCounter, r.help);
    auto it = s.rocksdb_cfstats.find(std::string(r.key));
    if (it == s.rocksdb_cfstats.end()) continue;
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (end != it->second.c_str() && v >= 0) w.Sample(v * r.scale);
  }
  WriteChange(s, w);
  if (status != nullptr) *status = w.status();
  return w.Take();
}

}  // namespace shardkv::metrics
