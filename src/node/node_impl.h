// Node::Impl: the parts of a node and their order of start and stop (design.md "Layers"). Internal
// to src/node: node.cc starts a node, node_setup.cc has the steps Start calls and the stop.
#pragma once

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_consensus.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "cluster/repair_state.h"
#include "cluster/scan_coordinator.h"
#include "clustermap/cluster_map_builder.h"
#include "common/hlc.h"
#include "common/mutex.h"
#include "metrics/metrics_server.h"
#include "net/peer_pool.h"
#include "net/server.h"
#include "node/kv_service.h"
#include "node/metrics_source.h"
#include "node/node_options.h"
#include "node/node_stats.h"
#include "rebalance/gc_horizon.h"
#include "rebalance/rebalancer.h"
#include "rebalance/reconciler.h"
#include "rebalance/repair_scheduler.h"
#include "rebalance/repair_service.h"
#include "rebalance/stream_sink.h"
#include "rebalance/stream_source.h"
#include "redis/peer_cluster_view.h"
#include "redis/redis_server.h"
#include "shardkv/node.h"
#include "shardkv/secret_file.h"
#include "shardkv/stats.h"
#include "storage/storage.h"

namespace shardkv {

// Implements node::NodeReport: its addresses, connections and parts' counters in the stats
// reply (node_report.cc).
class Node::Impl : public node::NodeReport {
 public:
  explicit Impl(NodeOptions options) : options_(std::move(options)) {}

  Status Start();
  void Stop();
  // The first step of a graceful Stop (NodeOptions::hand_off_at_stop).
  void HandOffLeadership();
  void Wait() {
    common::MutexLock lock(&mu_);
    while (!stopped_) lock.Wait(stopped_cv_);
  }
  uint16_t port() const { return server_ ? server_->bound_port() : 0; }
  uint16_t metrics_port() const { return metrics_server_ ? metrics_server_->bound_port() : 0; }
  // The address the cluster map records and peers use: --advertise when given (the bound one
  // may be 0.0.0.0, or hidden behind a container's or NAT's mapping), else the bound one.
  std::string address() const {
    return options_.advertise.empty() ? bound_address() : options_.advertise;
  }
  std::string bound_address() const { return host_ + ":" + std::to_string(port()); }
  uint32_t id() const { return options_.id; }
  StatusOr<uint64_t> Compact() {
    SHARDKV_RETURN_IF_ERROR(storage_->Flush());
    SHARDKV_RETURN_IF_ERROR(storage_->CompactRange(TokenRange{0, UINT64_MAX}));
    return storage_->TombstonesDropped();
  }

 private:
  Status WritePortFile();
  Status StartRedis();
  std::string RedisHost(const std::string& bound) const;
  // host:port of the Redis listener and of the metrics listener ("" without one).
  std::string RedisAddress() const;
  std::string MetricsAddress() const;
  void AddStats(net::StatsResponse* out) override;
  Status StartMetrics();
  Status WriteFileAtomically(const std::string& name, const std::string& text);
  Status LockDataDir();
  Status CheckIdentity();
  Status NoDatabaseError() const;
  Status LoadMap();
  Status Rebuild();
  Status StartConsensus();
  // The ranges whose tombstone GC waits for a repair, and the replicas it waits for.
  rebalance::GcHorizon::Blocked GcBlocking() const {
    return gc_horizon_->Blocking(
        storage_->WallClockMs(), options_.tombstone_grace_ms,
        [this](uint32_t id) { return membership_->IsAlive(id) && repair_->ReadRefusal(id).ok(); });
  }

  NodeOptions options_;
  std::string auth_secret_;    // the bytes of options_.auth_secret_file (empty: none)
  std::string client_secret_;  // the bytes of options_.client_secret_file
  std::shared_ptr<const net::TlsContext> tls_;  // null: no TLS
  std::string host_;
  int lock_fd_ = -1;
  bool started_ = false;  // Start() completed
  std::unique_ptr<storage::Storage> storage_;
  // Before maps_ (whose publish hook refreshes it) and every user: destroyed after them.
  std::unique_ptr<rebalance::GcHorizon> gc_horizon_;
  std::unique_ptr<cluster::MapStore> maps_;
  std::unique_ptr<cluster::HintStore> hints_;
  std::unique_ptr<net::PeerPool> peers_;
  std::unique_ptr<cluster::RepairState> repair_;
  std::shared_ptr<cluster::Coordinator> coordinator_;
  std::shared_ptr<cluster::ScanCoordinator> scans_;
  std::unique_ptr<cluster::Membership> membership_;
  std::unique_ptr<cluster::MapConsensus> consensus_;  // null with map_consensus off
  std::unique_ptr<rebalance::Reconciler> reconciler_;
  std::unique_ptr<rebalance::StreamSource> stream_source_;
  std::unique_ptr<rebalance::StreamSink> stream_sink_;
  std::unique_ptr<rebalance::Rebalancer> rebalancer_;
  std::unique_ptr<rebalance::RepairService> repair_service_;      // anti-entropy
  std::unique_ptr<rebalance::RepairScheduler> repair_scheduler_;  // null: background repair off
  node::NodeStats stats_;
  std::unique_ptr<node::KvService> service_;
  std::unique_ptr<net::Server> server_;
  std::unique_ptr<redis::RedisServer> redis_;  // null without --redis-listen
  std::atomic<uint16_t> redis_port_{0};
  std::unique_ptr<node::MetricsSource> metrics_source_;
  std::unique_ptr<metrics::MetricsServer> metrics_server_;  // null without --metrics-listen
  std::string metrics_host_;

  common::Mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace shardkv
