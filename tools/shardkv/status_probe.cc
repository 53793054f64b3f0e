#include "status_probe.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <sstream>
#include <utility>

#include "shardkv/stats.h"

namespace shardkv::cli {
namespace {

std::optional<int64_t> Counter(const NodeStatsSnapshot& stats, std::string_view name) {
  auto it = stats.counters.find(std::string(name));
  if (it == stats.counters.end()) return std::nullopt;
  return it->second;
}

// "850 ms", "12 s", "5 min", "3 h", "2 d".
std::string Span(int64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  if (ms < 120 * 1000) return std::to_string(ms / 1000) + " s";
  if (ms < 120 * 60 * 1000) return std::to_string(ms / 60000) + " min";
  if (ms < 48 * 3600 * 1000) return std::to_string(ms / 3600000) + " h";
  return std::to_string(ms / 86400000) + " d";
}

}  // namespace

// The map's ClusterMap::ContentHash, as 16 hex digits.
std::string Digest(const ClusterMap& map) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(map.ContentHash()));
  return buf;
}

// Asks without an expected cluster id (Admin::Probe sends none), so a node of another cluster
// still answers and can be shown as a mismatch rather than as down.
Probe ProbeNode(NodeProber* prober, const std::string& address) {
  Probe p;
  if (address.empty()) return p;
  NodeProbe np = prober->Probe(address);
  if (!np.reachable) return p;
  p.up = true;
  p.unformed = np.unformed;
  p.map = std::move(np.map);
  p.clock_offset_ms = np.clock_offset_ms;
  p.round_trip_ms = np.round_trip_ms;
  if (np.stats) {
    if (auto it = np.stats->counters.find(std::string(stats::uptime_s));
        it != np.stats->counters.end()) {
      p.uptime_s = it->second;
    }
    if (auto it = np.stats->info.find(std::string(stats::version)); it != np.stats->info.end())
      p.version = it->second;
    if (auto it = np.stats->info.find(std::string(stats::address)); it != np.stats->info.end())
      p.advertised = it->second;
    if (auto it = np.stats->info.find(std::string(stats::redis_address));
        it != np.stats->info.end())
      p.redis = it->second;
    if (auto it = np.stats->info.find(std::string(stats::metrics_address));
        it != np.stats->info.end() && !it->second.empty()) {
      p.metrics = it->second;
    }
    p.repair = ReadRepairReport(*np.stats);
    if (auto on = Counter(*np.stats, stats::repair_background)) p.repair_schedule.on = *on != 0;
    p.repair_schedule.period_ms = Counter(*np.stats, stats::repair_period_ms);
    p.repair_schedule.last_full_ms = Counter(*np.stats, stats::repair_last_full_ms);
    p.repair_schedule.gc_blocked_ranges = Counter(*np.stats, stats::gc_blocked_ranges);
    if (auto it = np.stats->info.find(std::string(stats::gc_blocked_by));
        it != np.stats->info.end()) {
      std::string id;
      std::istringstream ids(it->second);
      while (std::getline(ids, id, ',')) {
        if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos) {
          p.repair_schedule.gc_blocked_by.push_back(static_cast<uint32_t>(std::stoul(id)));
        }
      }
    }
    p.consensus = ReadConsensusReport(*np.stats);
    const auto& counters = np.stats->counters;
    // The node's counted live keys; RocksDB's estimate (tombstones and expired records
    // included) only from a node of an older release.
    if (auto it = counters.find(std::string(stats::live_keys)); it != counters.end()) {
      p.keys = it->second;
      auto counted = counters.find(std::string(stats::live_keys_counted));
      p.keys_estimate = counted == counters.end() || counted->second == 0;
    } else if (auto approx = counters.find(std::string(stats::keys_approx));
               approx != counters.end()) {
      p.keys = approx->second;
    }
    if (auto it = counters.find(std::string(stats::node_id)); it != counters.end())
      p.node_id = it->second;
    if (auto it = counters.find(std::string(stats::clock_skewed)); it != counters.end())
      p.clock_skewed = it->second != 0;
    if (auto it = counters.find(std::string(stats::clock_offset_ms)); it != counters.end())
      p.clock_offset_to_peers = it->second;
    // The gauge is 1 while the node's writes fail with no space left; a node that does not
    // report it (older) counts as not full.
    if (auto it = np.stats->gauges.find(std::string(stats::disk_full));
        it != np.stats->gauges.end()) {
      p.disk_full = it->second != 0;
    }
    if (auto it = np.stats->gauges.find(std::string(stats::storage_failing));
        it != np.stats->gauges.end() && it->second != 0) {
      auto error = np.stats->info.find(std::string(stats::storage_error));
      p.storage_error = error != np.stats->info.end() ? error->second : "an I/O error";
    }
  }
  return p;
}

// Probes every address not yet in `probes`, in parallel.
void ProbeAll(NodeProber* prober, const std::vector<std::string>& addresses,
              std::chrono::milliseconds timeout, std::map<std::string, Probe>* probes) {
  prober->SetTimeout(timeout);
  std::vector<std::pair<std::string, std::future<Probe>>> pending;
  for (const auto& a : addresses) {
    if (probes->count(a) != 0) continue;
    (*probes)[a] = Probe{};  // also dedups addresses listed twice
    pending.emplace_back(a, std::async(std::launch::async, ProbeNode, prober, a));
  }
  for (auto& [a, f] : pending) (*probes)[a] = f.get();
}

std::string DescribeBackgroundRepair(const BackgroundRepair& r, int64_t now_ms) {
  if (!r.on) return "";
  if (!*r.on) return "background repair off";
  const std::string period = r.period_ms ? " (period " + Span(*r.period_ms) + ")" : "";
  if (!r.last_full_ms || *r.last_full_ms == 0) return "no full repair yet" + period;
  return "last full repair " + Span(std::max<int64_t>(0, now_ms - *r.last_full_ms)) + " ago" +
         period;
}

}  // namespace shardkv::cli

namespace shardkv::cli {

std::string DescribeGcBlocked(const BackgroundRepair& r) {
  if (!r.gc_blocked_ranges || *r.gc_blocked_ranges <= 0) return "";
  std::string out = "tombstone GC blocked on " + std::to_string(*r.gc_blocked_ranges) +
                    (*r.gc_blocked_ranges == 1 ? " range" : " ranges");
  if (r.gc_blocked_by.empty()) return out + " (not repaired with every replica for a grace)";
  out += r.gc_blocked_by.size() == 1 ? " (waiting for node " : " (waiting for nodes ";
  for (size_t i = 0; i < r.gc_blocked_by.size(); ++i) {
    out += (i == 0 ? "" : ", ") + std::to_string(r.gc_blocked_by[i]);
  }
  return out + ": repair it, or remove it)";
}

}  // namespace shardkv::cli
