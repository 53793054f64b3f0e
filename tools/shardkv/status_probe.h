// What `cluster status` asks each node (cluster_status.h): its map and its stats reply, read into
// the fields the status shows. Split from cluster_status.cc to keep that file to the rows and
// their printing.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "consensus_status.h"
#include "local_cluster.h"
#include "repair_status.h"
#include "shardkv/admin.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {

// Background anti-entropy as a node reports it (stats counters repair_background,
// repair_period_ms, repair_last_full_ms); each unset while the node does not answer or, older,
// does not report it.
struct BackgroundRepair {
  std::optional<bool> on;
  std::optional<int64_t> period_ms;
  std::optional<int64_t> last_full_ms;  // 0: no full pass yet
  // Tombstone GC (design.md "Tombstones and GC"): the ranges held there whose GC waits for a
  // repair with every replica (stats gc_blocked_ranges), and the replicas down or needing
  // repair it waits for (info gc_blocked_by).
  std::optional<int64_t> gc_blocked_ranges;
  std::vector<uint32_t> gc_blocked_by;
};

// What one address answered.
struct Probe {
  bool up = false;
  bool unformed = false;
  std::optional<ClusterMap> map;
  std::optional<int64_t> keys;
  bool keys_estimate = true;
  std::optional<int64_t> node_id;
  bool disk_full = false;
  // While its storage fails with I/O errors: the error, as it reports it.
  std::optional<std::string> storage_error;
  std::optional<int64_t> clock_offset_ms;  // against this host's clock
  int64_t round_trip_ms = 0;
  std::optional<int64_t> uptime_s;
  std::optional<std::string> version, advertised, redis;
  std::optional<std::string> metrics;
  RepairReport repair;                // needs repair (repair_status.h)
  ConsensusReport consensus;          // voters, voter change (consensus_status.h)
  bool clock_skewed = false;          // by its own verdict (design.md "Clock offsets")
  int64_t clock_offset_to_peers = 0;  // its clock minus the other members', by its own measure
  BackgroundRepair repair_schedule;   // background anti-entropy
};

// The map's ClusterMap::ContentHash, as 16 hex digits.
std::string Digest(const ClusterMap& map);

// Asks `address` for its map and stats (nothing if it is empty or does not answer).
Probe ProbeNode(NodeProber* prober, const std::string& address);

// Probes every address not yet in `probes`, in parallel.
void ProbeAll(NodeProber* prober, const std::vector<std::string>& addresses,
              std::chrono::milliseconds timeout, std::map<std::string, Probe>* probes);

// "last full repair 12 s ago (period 6 s)", "background repair off", "no full repair yet
// (period 6 s)"; "" when unknown. `now_ms`: this host's wall clock.
std::string DescribeBackgroundRepair(const BackgroundRepair& r, int64_t now_ms);

// "tombstone GC blocked on 8 ranges (waiting for node 3)"; "" when nothing is blocked or unknown.
std::string DescribeGcBlocked(const BackgroundRepair& r);

}  // namespace shardkv::cli
