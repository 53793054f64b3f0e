// MetricsSource: what the node's metrics listener (metrics/metrics_server.h) serves, gathered
// from the node's parts: `GET /metrics` renders the stats reply, the per-op result counts and
// latency histograms of NodeStats, RocksDB's figures and the cluster map's change record
// (metrics/node_metrics.h); `/readyz` asks Ready().
//
// Client errors "since the change began" are this node's: when an installed map carries a
// change id this node has not seen, it notes its client error count then; a change already in
// the map the node started with counts from the start (the counter starts at 0 with the process).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "node/kv_service.h"
#include "node/node_stats.h"
#include "storage/storage.h"

namespace shardkv::node {

struct MetricsSourceDeps {
  uint32_t self_id = 0;
  KvService* service = nullptr;
  NodeStats* stats = nullptr;
  storage::Storage* storage = nullptr;
  cluster::MapStore* maps = nullptr;
};

class MetricsSource {
 public:
  // REQUIRES: the pointers outlive the object; registers a hook on deps.maps.
  explicit MetricsSource(MetricsSourceDeps deps);

  std::string Render();
  // OK while the node serves: it has started, its storage works, it has a map, is in it and not
  // marked down.
  // Unavailable with the reason otherwise (an unformed node is not ready).
  Status Ready() const;

 private:
  void OnPublish(const ClusterMap& next);

  MetricsSourceDeps d_;
  common::Mutex mu_;
  uint64_t change_id_ GUARDED_BY(mu_) = 0;         // the newest change id seen
  uint64_t errors_at_change_ GUARDED_BY(mu_) = 0;  // client_errors when it was first seen
};

}  // namespace shardkv::node
