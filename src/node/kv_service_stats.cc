// KvService's stats reply (`shardkv stats`, the metrics endpoint's source).
#include <chrono>
#include <string>

#include "node/kv_service.h"
#include "node/storage_status.h"
#include "shardkv/stats.h"

namespace shardkv::node {

net::ResponseBody KvService::Stats() {
  net::StatsResponse out;
  out.counters[std::string(stats::node_id)] = d_.self_id;
  out.counters[std::string(stats::uptime_s)] = static_cast<int64_t>(d_.stats->UptimeSeconds());
  // Read as late as possible before the reply goes out would be better still; here it is within
  // microseconds of it, far below the round trip that bounds the offset's precision anyway.
  out.counters[std::string(stats::wall_clock_ms)] =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  out.info[std::string(stats::version)] = SHARDKV_VERSION;
  for (size_t op = 0; op < kOpCount; ++op) {
    out.counters[std::string(stats::kOpsPrefix) + std::string(OpName(op))] =
        static_cast<int64_t>(d_.stats->OpCount(op));
  }
  out.counters[std::string(stats::client_errors)] = static_cast<int64_t>(d_.stats->client_errors());
  const cluster::CoordinatorStats cs = d_.coordinator->stats();
  out.counters[std::string(stats::quorum_failures)] = static_cast<int64_t>(cs.quorum_failures);
  out.counters[std::string(stats::read_repairs)] = static_cast<int64_t>(cs.read_repairs);
  out.counters[std::string(stats::hints_written)] = static_cast<int64_t>(cs.hints_written);
  out.counters[std::string(stats::hints_not_written)] = static_cast<int64_t>(cs.hints_not_written);
  out.counters[std::string(stats::hints_pending)] = static_cast<int64_t>(d_.hints->pending());
  out.counters[std::string(stats::hints_replayed)] = static_cast<int64_t>(d_.hints->replayed());
  out.counters[std::string(stats::hints_expired)] = static_cast<int64_t>(d_.hints->expired());
  out.counters[std::string(stats::hints_discarded)] = static_cast<int64_t>(d_.hints->discarded());
  out.counters[std::string(stats::stale_epoch_replies)] =
      static_cast<int64_t>(cs.stale_epoch_replies);
  out.counters[std::string(stats::redriven)] = static_cast<int64_t>(cs.redriven);
  out.counters[std::string(stats::writes_restamped)] = static_cast<int64_t>(cs.restamped);
  out.counters[std::string(stats::requests_late)] = static_cast<int64_t>(late_.load());
  out.counters[std::string(stats::requests_sent_on)] = static_cast<int64_t>(sent_on_.load());
  // The node's addresses, connections and its other parts' counters and info.
  if (d_.report != nullptr) d_.report->AddStats(&out);
  if (d_.repair != nullptr) {
    d_.repair->AddStats(&out);
  } else {
    out.counters[std::string(stats::needs_repair)] = 0;
    out.counters[std::string(stats::rebuilt_at_ms)] = 0;
  }
  // `formed` is the contract with `cluster init`: 0 on an unformed node, which has epoch 0.
  auto current = d_.maps->Current();
  out.counters[std::string(stats::formed)] = current ? 1 : 0;
  out.counters[std::string(stats::epoch)] =
      current ? static_cast<int64_t>(current->epoch()) : int64_t{0};
  auto range = d_.storage->ApproximateRangeStats(TokenRange{0, UINT64_MAX});
  if (range.ok()) {
    out.counters[std::string(stats::keys_approx)] = static_cast<int64_t>(range->approximate_keys);
    out.counters[std::string(stats::bytes_approx)] = static_cast<int64_t>(range->approximate_bytes);
  }
  AddStorageStats(*d_.storage, &out);
  const storage::LiveKeyCounts live = d_.storage->LiveKeys();
  out.counters[std::string(stats::live_keys)] = live.keys;
  out.counters[std::string(stats::live_keys_expiring)] = live.expiring;
  out.counters[std::string(stats::live_keys_counted)] = live.complete ? 1 : 0;
  out.gauges[std::string(stats::latency_p50_us)] =
      static_cast<double>(d_.stats->latency().Percentile(0.50));
  out.gauges[std::string(stats::latency_p99_us)] =
      static_cast<double>(d_.stats->latency().Percentile(0.99));
  out.gauges[std::string(stats::latency_p999_us)] =
      static_cast<double>(d_.stats->latency().Percentile(0.999));
  return out;
}

}  // namespace shardkv::node
