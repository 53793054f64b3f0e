// KvService: the node's request handler.
//
// Every operation is one row of an operation table (kv_service_ops.cc, indexed by the
// net::RequestBody alternative): its stats name, the guards it needs (OpGuard, run once per
// request in a fixed order), what it does on a node without a map, and its handler. Two adapters
// reach the rows: Handle (a decoded native request) and the ClientOperations calls (the Redis
// front end, typed, in process). A row without a handler does not compile.
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
// Thread-safety: Handle() and the ClientOperations calls may run concurrently on any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "cluster/repair_state.h"
#include "cluster/scan_coordinator.h"
#include "net/operations.h"
#include "net/server.h"
#include "node/node_stats.h"
#include "storage/storage.h"

namespace shardkv::rebalance {
class StreamSink;
class RepairService;
class Rebalancer;
}  // namespace shardkv::rebalance
namespace shardkv::cluster {
class MapConsensus;
}  // namespace shardkv::cluster
namespace shardkv::net {
class PeerPool;
}  // namespace shardkv::net

namespace shardkv::node {

struct KvServiceLimits {
  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{16} << 20;
};

// What the node adds to its stats reply that KvService cannot know itself: its addresses (the
// bound ports are known only once its listeners started, after KvService is built), its
// server's connection counters, and the counters and info of the rebalancer, the repair
// service and scheduler, the consensus and the Redis listener. One interface instead of one
// hook per source: Node::Impl owns all of them and implements it.
class NodeReport {
 public:
  virtual ~NodeReport() = default;
  // Adds its counters and info to `out` (only non-empty info values).
  virtual void AddStats(net::StatsResponse* out) = 0;
};

// Everything KvService serves with, given at construction: pointers to the node's parts (they
// outlive it) and one value. No std::function hooks: each former hook is now the part it called
// (design.md "Operation table": KvServiceDeps).
struct KvServiceDeps {
  uint32_t self_id = 0;
  storage::Storage* storage = nullptr;
  cluster::MapStore* maps = nullptr;
  NodeStats* stats = nullptr;
  std::shared_ptr<cluster::Coordinator> coordinator;
  std::shared_ptr<cluster::ScanCoordinator> scans;  // may be null: scans NotSupported
  // Installs, the epoch wait, and while this node's clock is skewed, the healthy coordinator to
  // send client requests on to (design.md "Clock offsets").
  cluster::Membership* membership = nullptr;
  cluster::HintStore* hints = nullptr;
  // Needs-repair marks (may be null: never refuses). While this node needs repair it refuses
  // replicaRead and replicaScan, and its stats say why.
  cluster::RepairState* repair = nullptr;
  rebalance::StreamSink* stream_sink = nullptr;  // may be null: streams NotSupported
  // Anti-entropy (tree queries, pushed records, repair commands); may be null: NotSupported.
  rebalance::RepairService* repair_service = nullptr;
  // The rebalancer's admin commands; may be null: NotSupported.
  rebalance::Rebalancer* rebalancer = nullptr;
  // The map consensus: its Raft messages, and its lease fence (design.md "Consensus": a node cut
  // off from the leader does not coordinate client operations). May be null: the node runs
  // without it (raft messages NotSupported, never fenced).
  cluster::MapConsensus* consensus = nullptr;
  // The node-to-node pool a skewed node sends client requests on through; may be null: never
  // sent on.
  net::PeerPool* peers = nullptr;
  NodeReport* report = nullptr;  // may be null: the stats reply has KvService's own only
  // A replica write carrying a deadline (its coordinator's wall clock; see CoordinatorOptions::
  // clock_agrees) is dropped once this node's clock is past it by more than this (the offset the
  // two clocks may have) plus 100 ms.
  uint64_t max_clock_offset_ms = 500;
};

// What an unformed node (no cluster id, no map: design.md "Unformed nodes") answers every
// request that needs a map.
std::string UnformedMessage(uint32_t node_id);

// The guards an operation's row asks for (design.md "Operation table"). They run once per
// request, in the order listed, after the formed check (a node without a map answers only the
// rows that serve unformed, and runs no other guard for them).
enum OpGuard : uint32_t {
  kGuardReady = 1u << 0,            // refused (starting) until SetReady(true); not an adoption
  kGuardClusterId = 1u << 1,        // refused if addressed to another cluster; not an adoption
  kGuardFence = 1u << 2,            // refused while this node is cut off from the leader
  kGuardSendOn = 1u << 3,           // sent on to a healthy coordinator while the clock is skewed
  kGuardDeadline = 1u << 4,         // dropped past its client's deadline (again after a wait)
  kGuardStorage = 1u << 5,          // refused while storage cannot take writes
  kGuardClock = 1u << 6,            // refused if the client's timestamp cannot move the clock
  kGuardEpoch = 1u << 7,            // held until this node has the sender's newer map
  kGuardReplicaDeadline = 1u << 8,  // dropped past its coordinator's deadline (replica writes)
  // Not a guard: a client data operation (its failures are client errors, a full disk is
  // reported plainly).
  kOpClient = 1u << 16,
};

// What a node without a map does with an operation.
enum class Unformed : uint8_t {
  kRefuse,     // Unavailable: unformed, or starting
  kServe,      // runs (it needs no map): ping, stats
  kNoMap,      // FailedPrecondition "unformed: ..." once ready (getClusterMap's contract)
  kAdoptOnly,  // runs if it adopts the node (installMap{adopt}), else refused
};

class KvService : public net::RequestHandler, public net::ClientOperations {
 public:
  KvService(KvServiceDeps deps, KvServiceLimits limits) : d_(std::move(deps)), limits_(limits) {}

  // The native server's adapter: a decoded request in, a response with this node's epoch,
  // timestamp and (for a sender behind) newer map out.
  void Handle(net::Request request, std::function<void(net::Response)> done) override;

  // The in-process adapter (the Redis front end): the same rows, guards, handlers and stats as
  // Handle, with typed requests and answers.
  void Get(net::OpOptions options, net::GetRequest request,
           net::OpDone<net::GetResponse> done) override;
  void Put(net::OpOptions options, net::PutRequest request,
           net::OpDone<net::PutResponse> done) override;
  void Delete(net::OpOptions options, net::DeleteRequest request,
              net::OpDone<net::DeleteResponse> done) override;
  void MultiGet(net::OpOptions options, net::MultiGetRequest request,
                net::OpDone<net::MultiGetResponse> done) override;
  void MultiPut(net::OpOptions options, net::MultiPutRequest request,
                net::OpDone<net::MultiPutResponse> done) override;
  void Expire(net::OpOptions options, net::ExpireRequest request,
              net::OpDone<net::PutResponse> done) override;
  void Scan(net::OpOptions options, net::ScanRequest request,
            net::OpDone<net::ScanResponse> done) override;
  void Incr(net::OpOptions options, net::IncrRequest request,
            net::OpDone<net::IncrResponse> done) override;
  void HashWrite(net::OpOptions options, net::HashWriteRequest request,
                 net::OpDone<net::HashWriteResponse> done) override;
  void HashRead(net::OpOptions options, net::HashReadRequest request,
                net::OpDone<net::HashReadResponse> done) override;
  void SetWrite(net::OpOptions options, net::SetWriteRequest request,
                net::OpDone<net::SetWriteResponse> done) override;
  void SetRead(net::OpOptions options, net::SetReadRequest request,
               net::OpDone<net::SetReadResponse> done) override;

  // Until ready, requests other than ping, stats, getClusterMap and adopting installs are
  // refused with Unavailable (a restarting node first fetches the newest map from its peers).
  // A ready node without a map is unformed: see Unformed.
  void SetReady(bool ready) { ready_.store(ready); }
  bool ready() const { return ready_.load(); }

  // For the metrics endpoint (node/metrics_source.h): the stats reply `shardkv stats` gets, and
  // the stats name of request op `op` (a net::RequestBody index < kOpCount).
  net::StatsResponse StatsSnapshot() { return std::get<net::StatsResponse>(Stats()); }
  static constexpr size_t kOpCount = std::variant_size_v<net::RequestBody>;
  static std::string_view OpName(size_t op);
  // Op `op`'s row (tests/node/op_table_test.cc): its OpGuard bits and what it does unformed.
  static uint32_t OpGuards(size_t op);
  static Unformed OpUnformed(size_t op);

 private:
  friend struct OpTable;  // kv_service_ops.cc: the rows and their handlers
  using Reply = std::function<void(net::ResponseBody)>;
  // What the guards and the handlers read of a request: its header's fields (0 for a call in
  // this process) and the map it runs under.
  struct Call {
    std::shared_ptr<const ClusterMap> map;  // null on a node without one
    uint64_t epoch = 0;
    uint64_t cluster_id = 0;
    uint64_t client_ts = 0;
    uint64_t deadline_ms = 0;
    net::Consistency consistency = net::Consistency::kDefault;
    bool forwarded = false;
    bool adopt = false;  // an installMap that adopts this node
  };
  // What the guards decided.
  struct Admission {
    enum class Kind : uint8_t { kRun, kRefuse, kSendOn, kAwaitEpoch };
    Kind kind = Kind::kRun;
    Status refusal;                     // kRefuse
    std::string send_to;                // kSendOn: the healthy coordinator
    std::chrono::milliseconds wait{0};  // kAwaitEpoch: at most this long
  };

  static Admission Refuse(Status s);
  // The guards up to the epoch wait, in their documented order.
  Admission Admit(uint32_t guards, Unformed unformed, Call& call);
  // The guards that run just before the handler, after any wait: the client's deadline again
  // (only after a wait), a replica write's coordinator deadline.
  Status AtDispatch(uint32_t guards, const Call& call, bool waited);
  // Sends a request this node must not coordinate (skewed clock) on to `address`; `done` gets
  // the answer and the coordinator's reply timestamp.
  void SendOn(const std::string& address, net::Request request,
              std::function<void(net::ResponseBody, uint64_t ts)> done);
  // Runs op `op`'s native handler (its guards passed).
  void RunNative(size_t op, Call& call, net::RequestBody& body, Reply&& reply);
  // The in-process adapter behind Get ... Scan.
  template <typename Req, typename Resp>
  void RunTyped(net::OpOptions options, Req request, net::OpDone<Resp> done);

  Status CheckKey(std::string_view key) const;
  Status CheckValue(std::string_view value) const;
  Status CheckFence(const ClusterMap& map, uint64_t sender_epoch, uint64_t token) const;
  // InvalidArgument unless a put's TTL is representable (see kMaxExpiresAtMs).
  Status CheckTtl(uint64_t ttl_ms) const;
  static cluster::WriteSpec PutSpec(net::PutRequest& r);

  // The client operations' handlers (kv_service_ops.cc), shared by both adapters. They move
  // what they keep out of `r`. `done` is called once, with a Status (an error) or the op's typed
  // answer: the in-process adapter's takes a StatusOr, the native one's puts either straight
  // into a ResponseBody (OpTable::NativeDone).
  template <typename Done>
  void Serve(const Call& call, net::GetRequest& r, Done done);
  template <typename Done>
  void Serve(const Call& call, net::PutRequest& r, Done done);
  template <typename Done>
  void Serve(const Call& call, net::DeleteRequest& r, Done done);
  template <typename Done>
  void Serve(const Call& call, net::MultiGetRequest& r, Done done);
  template <typename Done>
  void Serve(const Call& call, net::MultiPutRequest& r, Done done);
  template <typename Done>
  void Serve(const Call& call, net::ScanRequest& r, Done done);
  // kv_service_ttl.cc: EXPIRE/PERSIST (read the key, then write its expiry register).
  void Serve(const Call& call, net::ExpireRequest& r, net::OpDone<net::PutResponse> done);
  // kv_service_counter.cc: INCRBY (read the counter, add to this node's totals, write them).
  void Serve(const Call& call, net::IncrRequest& r, net::OpDone<net::IncrResponse> done);
  // kv_service_hash.cc: HSET/HSETNX/HDEL (read the hash, write the fields) and HGETALL.
  void Serve(const Call& call, net::HashWriteRequest& r, net::OpDone<net::HashWriteResponse> done);
  void Serve(const Call& call, net::HashReadRequest& r, net::OpDone<net::HashReadResponse> done);
  // kv_service_set.cc: SADD/SREM (read the set, write the changed entries) and SMEMBERS.
  void Serve(const Call& call, net::SetWriteRequest& r, net::OpDone<net::SetWriteResponse> done);
  void Serve(const Call& call, net::SetReadRequest& r, net::OpDone<net::SetReadResponse> done);
  template <typename Resp, typename Done>
  void Write(const Call& call, std::string key, cluster::WriteSpec spec, Done done);

  // Node-to-node operations (kv_service_replica.cc).
  net::ResponseBody ReplicaWrite(const ClusterMap& map, uint64_t sender_epoch,
                                 const net::ReplicaWriteRequest& r);
  net::ResponseBody ReplicaWriteBatch(const ClusterMap& map, uint64_t sender_epoch,
                                      const net::ReplicaWriteBatchRequest& r);
  net::ResponseBody ReplicaRead(const ClusterMap& map, uint64_t sender_epoch,
                                const net::ReplicaReadRequest& r);
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
