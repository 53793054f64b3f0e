// RunRepair: the admin's side of Admin::Repair (design.md "Anti-entropy"). It asks every comparing
// node at once (a thread each), one slice at a time, to repair its ranges (net::RepairCommand),
// and sums the nodes' reports into the summary. `progress` is called under a lock, from those
// threads.
//
// Thread-safety: as AdminTransport (not thread-safe); it calls the transport from several threads
// only after setting its cluster id from `map`, after which the transport only reads it.
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
