// KvService: the node's request handler.
//
// - Client operations (get/put/delete and their batches) are coordinated: the Coordinator runs
//   them against the key's replica set with the requested consistency.
// - Replica operations (replicaWrite/replicaRead) apply to local storage, fenced by epoch: a
//   sender with an older map is refused with STALE_EPOCH (and given the newer map) for a token
//   this node does not hold under its own map.
// - Admin and info: ping (gossip), stats, getClusterMap, installMap (via Membership), and the
//   rebalancer's admin commands.
// - Scans: scan is run by the ScanCoordinator; replicaScan reads one range of local storage.
// - Streams (rebalancing): streamScan is served by the StreamSource, streamRange and countRanges
//   by the StreamSink's threads.
// A request carrying a newer epoch than this node's waits until the node has that map (it pulls
// it from its peers), so a joint write never lands before the node knows the change.
// Every request is checked for cluster id, key and value limits; the node's HLC moves past the
// client's newest timestamp first, so a client's later write always wins over its earlier one.
//
// Requests run on the server's I/O threads; local RocksDB calls take microseconds, and
// coordinated requests answer from network callbacks without blocking.
//
// Thread-safety: Handle() may run concurrently on every I/O thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "cluster/repair_state.h"
#include "cluster/scan_coordinator.h"
#include "net/server.h"
#include "node/node_stats.h"
#include "storage/storage.h"

namespace shardkv::rebalance {
class StreamSource;
class StreamSink;
class RepairService;
}  // namespace shardkv::rebalance

namespace shardkv::node {

struct KvServiceLimits {
  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{16} << 20;
};

struct KvServiceDeps {
  uint32_t self_id = 0;
  storage::Storage* storage = nullptr;
  cluster::MapStore* maps = nullptr;
  NodeStats* stats = nullptr;
  std::shared_ptr<cluster::Coordinator> coordinator;
  std::shared_ptr<cluster::ScanCoordinator> scans;  // may be null: scans NotSupported
  cluster::Membership* membership = nullptr;
  cluster::HintStore* hints = nullptr;
  // Needs-repair marks (may be null: never refuses). While this node needs repair it refuses
  // replicaRead and replicaScan, and its stats say why.
  cluster::RepairState* repair = nullptr;
  std::function<net::Server::Stats()> server_stats;  // may be empty
  rebalance::StreamSource* stream_source = nullptr;
  rebalance::StreamSink* stream_sink = nullptr;
  // Anti-entropy (tree queries, pushed records, repair commands); may be null: NotSupported.
  rebalance::RepairService* repair_service = nullptr;
  // The rebalancer's admin commands (may be empty: NotSupported).
  std::function<void(net::AdminRequest, std::function<void(net::ResponseBody)>)> admin;
  // Extra counters for stats (the rebalancer's), may be empty.
  std::function<void(std::map<std::string, int64_t>*)> extra_counters;
  // Extra info values for stats (the consensus's), may be empty; only non-empty values are set.
  std::function<void(std::map<std::string, std::string>*)> extra_info;
  // The address the node advertises (stats info `address`); may be empty.
  std::function<std::string()> advertised_address;
  // The Redis listener's address (stats info `redis_address`, left out when empty); may be empty.
  std::function<std::string()> redis_address;
  // host:port of the metrics listener (stats info `metrics_address`); may be empty.
  std::function<std::string()> metrics_address;
  // A Raft message for the map consensus (may be empty: the node runs without it).
  std::function<void(std::string)> raft_message;
  // Why this node must not coordinate client operations now (design.md "Consensus": the lease
  // fence), or OK. May be empty.
  std::function<Status()> fence;
  // While this node's clock is skewed: where to send client requests on to ("" otherwise), and
  // how (design.md "Clock offsets"). May be empty.
  std::function<std::string()> healthy_coordinator;
  // A replica write carrying a deadline (its coordinator's wall clock; see CoordinatorOptions::
  // clock_agrees) is dropped once this node's clock is past it by more than this (the offset the
  // two clocks may have) plus 100 ms.
  uint64_t max_clock_offset_ms = 500;
  // `done` gets the coordinator's answer and the HLC timestamp of its reply (0 without one),
  // which the relayed reply carries instead of this node's: a skewed clock's timestamp would
  // make every healthy node refuse the client that relays it.
  std::function<void(const std::string& address, net::Request request,
                     std::function<void(net::ResponseBody, uint64_t ts)> done)>
      forward;
};

// What an unformed node (no cluster id, no map: design.md "Unformed nodes") answers every
// request that needs a map.
std::string UnformedMessage(uint32_t node_id);

class KvService : public net::RequestHandler {
 public:
  KvService(KvServiceDeps deps, KvServiceLimits limits) : d_(std::move(deps)), limits_(limits) {}

  void Handle(net::Request request, std::function<void(net::Response)> done) override;

  // Until ready, requests other than ping, stats, getClusterMap and adopting installs are
  // refused with Unavailable (a restarting node first fetches the newest map from its peers).
  // A ready node without a map is unformed: see HandleWithoutMap.
  void SetReady(bool ready) { ready_.store(ready); }
  bool ready() const { return ready_.load(); }

  // For the metrics endpoint (node/metrics_source.h): the stats reply `shardkv stats` gets, and
  // the stats name of request op `op` (a net::RequestBody index < kOpCount).
  net::StatsResponse StatsSnapshot() { return std::get<net::StatsResponse>(Stats()); }
  static constexpr size_t kOpCount = std::variant_size_v<net::RequestBody>;
  static std::string_view OpName(size_t op);

 private:
  using Reply = std::function<void(net::ResponseBody)>;

  Status CheckKey(std::string_view key) const;
  Status CheckValue(std::string_view value) const;
  Status CheckFence(const ClusterMap& map, uint64_t sender_epoch, uint64_t token) const;
  void Dispatch(const std::shared_ptr<const ClusterMap>& map, net::Request& request, Reply reply);
  void HandleWithoutMap(net::Request& request, Reply reply);
  void Get(const std::shared_ptr<const ClusterMap>& map, net::Consistency c, net::GetRequest& r,
           Reply reply);
  void Write(const std::shared_ptr<const ClusterMap>& map, net::Consistency c, std::string key,
             cluster::WriteSpec spec, Reply reply);
  // kv_service_ttl.cc: EXPIRE/PERSIST (read the key, then write its expiry register).
  void Expire(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
              net::ExpireRequest& r, Reply reply);
  // InvalidArgument unless a put's TTL is representable (see kMaxExpiresAtMs).
  Status CheckTtl(uint64_t ttl_ms) const;
  static cluster::WriteSpec PutSpec(net::PutRequest& r);
  void MultiGet(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                net::MultiGetRequest& r, Reply reply);
  void MultiPut(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                net::MultiPutRequest& r, uint64_t deadline_ms, Reply reply);
  net::ResponseBody ReplicaWrite(const ClusterMap& map, uint64_t sender_epoch,
                                 const net::ReplicaWriteRequest& r);
  net::ResponseBody ReplicaWriteBatch(const ClusterMap& map, uint64_t sender_epoch,
                                      const net::ReplicaWriteBatchRequest& r);
  net::ResponseBody ReplicaRead(const ClusterMap& map, uint64_t sender_epoch,
                                const net::ReplicaReadRequest& r);
  void Scan(const std::shared_ptr<const ClusterMap>& map, net::Consistency c, net::ScanRequest r,
            Reply reply);
  net::ResponseBody ReplicaScan(const ClusterMap& map, uint64_t sender_epoch,
                                const net::ReplicaScanRequest& r);
  net::ResponseBody Stats();

  KvServiceDeps d_;
  KvServiceLimits limits_;
  std::atomic<bool> ready_{false};
  std::atomic<uint64_t> late_{0};     // stats::requests_late
  std::atomic<uint64_t> sent_on_{0};  // stats::requests_sent_on
};

}  // namespace shardkv::node
