// RunRepair: the admin's side of Admin::Repair (design.md "Anti-entropy"). It asks each comparing
// node, one at a time and one slice at a time, to repair its ranges (net::RepairCommand), and
// sums the nodes' reports into the summary.
//
// Thread-safety: as AdminTransport (not thread-safe).
#pragma once

#include <chrono>

#include "admin/admin_transport.h"
#include "shardkv/cluster_map.h"
#include "shardkv/repair.h"
#include "shardkv/status.h"

namespace shardkv::admin {

// `map`: the cluster's newest map. `timeout`: the admin's per-request timeout; a slice may take
// longer (a range is never cut), so each request waits for slice_ms plus a margin.
StatusOr<RepairSummary> RunRepair(AdminTransport* transport, const ClusterMap& map,
                                  const RepairOptions& options, const RepairProgressFn& progress,
                                  std::chrono::milliseconds timeout);

}  // namespace shardkv::admin
