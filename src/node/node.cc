#include "shardkv/node.h"

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
#include "rebalance/rebalancer.h"
#include "rebalance/reconciler.h"
#include "rebalance/stream_sink.h"
#include "rebalance/stream_source.h"
#include "redis/peer_cluster_view.h"
#include "redis/redis_server.h"
#include "shardkv/secret_file.h"
#include "shardkv/stats.h"
#include "storage/storage.h"

namespace shardkv {

namespace fs = std::filesystem;

class Node::Impl {
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
  Status StartMetrics();
  Status WriteFileAtomically(const std::string& name, const std::string& text);
  Status LockDataDir();
  Status CheckIdentity();
  Status NoDatabaseError() const;
  Status LoadMap();
  Status Rebuild();
  Status StartConsensus();

  NodeOptions options_;
  std::string auth_secret_;    // the bytes of options_.auth_secret_file (empty: none)
  std::string client_secret_;  // the bytes of options_.client_secret_file
  std::shared_ptr<const net::TlsContext> tls_;  // null: no TLS
  std::string host_;
  int lock_fd_ = -1;
  bool started_ = false;  // Start() completed
  std::unique_ptr<storage::Storage> storage_;
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

namespace {

// Held (flock) for the node's lifetime: two nodes on one data directory would share a port file
// and fight over RocksDB's own lock with a less helpful message.
constexpr char kLockFile[] = "node.lock";

}  // namespace

Status Node::Impl::Start() {
  uint16_t port = 0;
  // The secrets first: a bad file is refused before the data directory is touched.
  auto load_secret = [this](const std::string& file, const char* flag, std::string* out) {
    if (file.empty()) return Status::OK();
    auto loaded = LoadSecretFile(file, flag);
    if (!loaded.ok()) return loaded.status();
    if (!loaded->warning.empty()) spdlog::warn("node {}: {}", options_.id, loaded->warning);
    *out = std::move(loaded->secret);
    return Status::OK();
  };
  SHARDKV_RETURN_IF_ERROR(
      load_secret(options_.auth_secret_file, "--auth-secret-file", &auth_secret_));
  SHARDKV_RETURN_IF_ERROR(
      load_secret(options_.client_secret_file, "--client-secret-file", &client_secret_));
  if (!options_.tls_ca_file.empty() || !options_.tls_cert_file.empty() ||
      !options_.tls_key_file.empty()) {
    net::TlsFiles files{options_.tls_ca_file, options_.tls_cert_file, options_.tls_key_file,
                        "--tls-ca",           "--tls-cert",           "--tls-key"};
    auto loaded = net::TlsContext::Load(files);
    if (!loaded.ok()) return loaded.status();
    tls_ = std::move(*loaded);
    spdlog::info("node {}: TLS with {}", options_.id, tls_->summary());
  }
  SHARDKV_RETURN_IF_ERROR(node::ParseHostPort(options_.listen, "--listen", &host_, &port));
  std::error_code ec;
  fs::create_directories(options_.data_dir, ec);
  if (ec) {
    return Status::IOError("cannot create data directory " + options_.data_dir + ": " +
                           ec.message());
  }
  SHARDKV_RETURN_IF_ERROR(LockDataDir());

  storage::StorageOptions so;
  so.sync = options_.sync;
  so.node_id = options_.id;
  so.tombstone_grace_ms = options_.tombstone_grace_ms;
  so.max_clock_offset_ms = options_.max_clock_offset_ms;
  // A restarted clock starts at its persisted ceiling, up to one window ahead of wall time. Keep
  // that well inside the offset peers accept, or a node's first timestamps after a restart
  // (say, after `cluster down; cluster up`) would be refused as "too far ahead".
  so.hlc_ceiling_window_ms = std::max<uint64_t>(1, options_.max_clock_offset_ms / 4);
  so.block_cache_bytes = options_.block_cache_bytes;
  so.max_key_bytes = options_.max_key_bytes;
  so.max_value_bytes = options_.max_value_bytes;
  // A member of a known cluster must never start a fresh database: its data was lost, and
  // serving empty would answer "not found" for a third of the keys (findings row 7).
  so.create_if_missing = options_.cluster_id == 0 || options_.rebuild;
  auto storage = storage::Storage::Open((fs::path(options_.data_dir) / "db").string(), so);
  if (!storage.ok() && storage.status().IsNotFound()) return NoDatabaseError();
  if (!storage.ok()) return storage.status().WithContext("opening " + options_.data_dir);
  storage_ = std::move(storage).value();
  maps_ = std::make_unique<cluster::MapStore>(storage_.get());
  SHARDKV_RETURN_IF_ERROR(CheckIdentity());

  hints_ = std::make_unique<cluster::HintStore>(storage_.get(), options_.tombstone_grace_ms, [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  });
  SHARDKV_RETURN_IF_ERROR(hints_->Load());
  // Nodes use the cluster secret, and the node's own certificate as their client certificate.
  peers_ = std::make_unique<net::PeerPool>(1, auth_secret_, tls_);
  cluster::RepairStateOptions ro;
  ro.self_id = options_.id;
  repair_ = std::make_unique<cluster::RepairState>(ro, storage_.get(), maps_.get(), peers_.get(),
                                                   hints_.get());
  SHARDKV_RETURN_IF_ERROR(repair_->Load());
  cluster::CoordinatorOptions co;
  co.self_id = options_.id;
  co.read_refusal = [repair = repair_.get()](uint32_t id) { return repair->ReadRefusal(id); };
  coordinator_ = std::make_shared<cluster::Coordinator>(co, storage_.get(), maps_.get(),
                                                        peers_.get(), hints_.get());
  scans_ = std::make_shared<cluster::ScanCoordinator>(
      cluster::ScanCoordinatorOptions{options_.id, co.replica_timeout, co.read_refusal},
      storage_.get(), maps_.get(), peers_.get());
  cluster::MembershipOptions mo;
  mo.self_id = options_.id;
  mo.cluster_id = options_.cluster_id;
  mo.max_clock_offset_ms = options_.max_clock_offset_ms;
  membership_ = std::make_unique<cluster::Membership>(mo, maps_.get(), peers_.get(), coordinator_,
                                                      hints_.get());
  if (options_.map_consensus) {
    cluster::MapConsensusOptions mco;
    mco.self_id = options_.id;
    consensus_ =
        std::make_unique<cluster::MapConsensus>(mco, storage_.get(), maps_.get(), peers_.get());
    membership_->SetAdoptHook([this](const ClusterMap& map) { return consensus_->Adopt(map); });
  }

  reconciler_ = std::make_unique<rebalance::Reconciler>(options_.id, storage_.get());
  reconciler_->Attach(maps_.get());
  reconciler_->Start();
  stream_source_ = std::make_unique<rebalance::StreamSource>(
      options_.id, storage_.get(), maps_.get(),
      [repair = repair_.get()] { return repair->Refusal("to be a stream source"); });
  rebalance::StreamSinkOptions sink_options;
  sink_options.self_id = options_.id;
  stream_sink_ = std::make_unique<rebalance::StreamSink>(sink_options, storage_.get(), maps_.get(),
                                                         peers_.get(), stream_source_.get());
  rebalance::RebalancerOptions rebalancer_options;
  rebalancer_options.self_id = options_.id;
  rebalancer_options.consensus = consensus_.get();
  rebalancer_ = std::make_unique<rebalance::Rebalancer>(rebalancer_options, maps_.get(),
                                                        peers_.get(), membership_.get());
  net::ServerOptions server_options;
  server_options.host = host_;
  server_options.port = port;
  server_options.io_threads = std::max(1, options_.io_threads);
  server_options.codec.max_frame_bytes = options_.max_frame_bytes;
  server_options.auth_secret = auth_secret_;
  server_options.client_secret = client_secret_;
  server_options.tls = tls_;
  node::KvServiceDeps deps;
  deps.self_id = options_.id;
  deps.storage = storage_.get();
  deps.maps = maps_.get();
  deps.stats = &stats_;
  deps.coordinator = coordinator_;
  deps.scans = scans_;
  deps.membership = membership_.get();
  deps.hints = hints_.get();
  deps.repair = repair_.get();
  deps.server_stats = [this] { return server_->stats(); };
  deps.stream_source = stream_source_.get();
  deps.stream_sink = stream_sink_.get();
  deps.healthy_coordinator = [this] { return membership_->HealthyCoordinator(); };
  deps.forward = [this](const std::string& address, net::Request request,
                        std::function<void(net::ResponseBody)> done) {
    // Within the client's deadline, or the default client timeout without one.
    auto timeout = std::chrono::milliseconds(5000);
    const uint64_t now_ms = common::HlcClock::WallClockMs();
    if (request.deadline_ms > now_ms) {
      timeout = std::chrono::milliseconds(request.deadline_ms - now_ms);
    }
    peers_->Call(
        address, std::move(request), timeout,
        [address, done = std::move(done)](StatusOr<net::Response> r) {
          if (r.ok()) return done(std::move(r->body));
          done(net::ErrorResponse{
              r.status().code(),
              "sent on to " + address + " (this node's clock is skewed): " + r.status().message()});
        });
  };
  if (consensus_) {
    deps.raft_message = [this](std::string m) { consensus_->Receive(std::move(m)); };
    deps.fence = [this] { return consensus_->Fence(); };
  }
  deps.admin = [this](net::AdminRequest request, std::function<void(net::ResponseBody)> done) {
    rebalancer_->HandleAdmin(std::move(request), std::move(done));
  };
  deps.advertised_address = [this] {
    return options_.advertise.empty() ? address() : options_.advertise;
  };
  deps.redis_address = [this]() -> std::string {
    if (redis_port_.load() == 0) return "";
    std::string host;
    uint16_t unused = 0;
    (void)node::ParseHostPort(options_.redis_listen, "--redis-listen", &host, &unused);
    return RedisHost(host) + ":" + std::to_string(redis_port_.load());
  };
  deps.metrics_address = [this] {
    if (!metrics_server_) return std::string();
    const bool v6 = metrics_host_.find(':') != std::string::npos;
    return (v6 ? "[" + metrics_host_ + "]" : metrics_host_) + ":" + std::to_string(metrics_port());
  };
  deps.extra_counters = [this](std::map<std::string, int64_t>* counters) {
    rebalancer_->AddCounters(counters);
    (*counters)[std::string(stats::stream_tasks_resumed)] =
        static_cast<int64_t>(stream_sink_->resumed_tasks());
    (*counters)[std::string(stats::stream_entries_pulled)] =
        static_cast<int64_t>(stream_sink_->entries_pulled());
    (*counters)[std::string(stats::ranges_dropped)] =
        static_cast<int64_t>(reconciler_->ranges_dropped());
    const cluster::ClockVerdict clock = membership_->Clock();
    (*counters)[std::string(stats::clock_skewed)] = clock.skewed ? 1 : 0;
    (*counters)[std::string(stats::clock_offset_ms)] = clock.offset_ms;
    auto applied = consensus_ ? consensus_->Applied() : nullptr;
    (*counters)[std::string(stats::consensus_leader_id)] = consensus_ ? consensus_->LeaderId() : 0;
    (*counters)[std::string(stats::consensus_is_leader)] =
        consensus_ && consensus_->IsLeader() ? 1 : 0;
    (*counters)[std::string(stats::consensus_voters)] =
        consensus_ ? static_cast<int64_t>(consensus_->Voters().size()) : 0;
    (*counters)[std::string(stats::consensus_fenced)] =
        consensus_ && !consensus_->Fence().ok() ? 1 : 0;
    (*counters)[std::string(stats::consensus_applied_epoch)] =
        applied ? static_cast<int64_t>(applied->epoch()) : 0;
  };
  service_ = std::make_unique<node::KvService>(
      std::move(deps), node::KvServiceLimits{options_.max_key_bytes, options_.max_value_bytes});
  server_ = std::make_unique<net::Server>(server_options, service_.get());
  // Before the map is loaded, so /healthz answers (and /readyz says "starting") meanwhile; and
  // before the server's I/O threads run, since their stats replies read metrics_server_.
  SHARDKV_RETURN_IF_ERROR(StartMetrics());
  SHARDKV_RETURN_IF_ERROR(server_->Start());
  if (options_.rebuild) {
    SHARDKV_RETURN_IF_ERROR(Rebuild());
  } else {
    SHARDKV_RETURN_IF_ERROR(LoadMap());
  }
  // A restarted member first learns the newest map from its peers, then serves (design.md
  // "Propagation"); the server already answers ping and getClusterMap meanwhile.
  membership_->FetchNewestMap(std::chrono::milliseconds(1000));
  // And its clock against theirs: a skewed node never stamps a write (design.md "Clock offsets").
  membership_->MeasureClocks();
  SHARDKV_RETURN_IF_ERROR(StartConsensus());
  // Before serving: a peer may have marked this node as needing repair while it was away.
  repair_->PollPeers(std::chrono::milliseconds(1000));
  repair_->Start();
  membership_->Start();
  stream_sink_->Start();
  rebalancer_->Start();
  service_->SetReady(true);
  SHARDKV_RETURN_IF_ERROR(StartRedis());
  SHARDKV_RETURN_IF_ERROR(WritePortFile());
  const std::string advertised =
      options_.advertise.empty() ? "" : " (advertised as " + options_.advertise + ")";
  if (maps_->Current() == nullptr) {
    spdlog::info(
        "node {} listening on {}{} (data {}), unformed: waiting for `shardkv cluster init` or "
        "`shardkv cluster join`",
        options_.id, bound_address(), advertised, options_.data_dir);
  } else {
    spdlog::info("node {} listening on {}{} (data {})", options_.id, bound_address(), advertised,
                 options_.data_dir);
  }
  started_ = true;
  return Status::OK();
}

std::string Node::Impl::RedisHost(const std::string& bound) const {
  // Clients dial the host of --advertise when the listener is bound to the any-address.
  if (bound != "0.0.0.0" && bound != "::") return bound;
  if (options_.advertise.empty()) return bound;
  std::string host;
  uint16_t port = 0;
  if (!node::ParseHostPort(options_.advertise, "--advertise", &host, &port).ok()) return bound;
  return host;
}

Status Node::Impl::StartRedis() {
  if (options_.redis_listen.empty()) return Status::OK();
  redis::RedisServerOptions ro;
  uint16_t port = 0;
  SHARDKV_RETURN_IF_ERROR(
      node::ParseHostPort(options_.redis_listen, "--redis-listen", &ro.host, &port));
  ro.port = port;
  ro.io_threads = std::max(1, options_.io_threads);
  // A bulk argument is a key or a value: nothing longer can be stored, so nothing longer is
  // buffered.
  ro.limits.max_bulk_bytes =
      static_cast<int64_t>(std::max(options_.max_key_bytes, options_.max_value_bytes));
  redis::CommandContext context;
  context.handler = service_.get();
  redis::PeerClusterViewOptions vo;
  vo.self_id = options_.id;
  context.view =
      std::make_shared<redis::PeerClusterView>(vo, maps_.get(), peers_.get(), service_.get());
  context.self_id = options_.id;
  context.allow_flush = options_.redis_allow_flush;
  context.redis_address = RedisHost(ro.host);
  // AUTH takes the client secret, or the cluster secret when there is no client secret.
  context.auth_secret = client_secret_.empty() ? auth_secret_ : client_secret_;
  redis_ = std::make_unique<redis::RedisServer>(std::move(ro), std::move(context));
  SHARDKV_RETURN_IF_ERROR(redis_->Start());
  redis_port_ = redis_->bound_port();
  return WriteFileAtomically("redis_port", std::to_string(redis_port_.load()) + "\n");
}

Status Node::Impl::LockDataDir() {
  const std::string path = (fs::path(options_.data_dir) / kLockFile).string();
  lock_fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(lock_fd_);
    lock_fd_ = -1;
    if (err == EWOULDBLOCK) {
      return Status::FailedPrecondition("data directory " + options_.data_dir +
                                        " is in use by another process (lock held)");
    }
    return Status::IOError("cannot lock " + path + ": " + std::strerror(err));
  }
  return Status::OK();
}

Status Node::Impl::NoDatabaseError() const {
  return Status::FailedPrecondition(
      "data directory " + options_.data_dir + " holds no database, but this node is member " +
      std::to_string(options_.id) + " of cluster " + std::to_string(options_.cluster_id) +
      "; it must not start empty: rebuild it with `shardkv cluster start-node " +
      std::to_string(options_.id) + " --rebuild`");
}

Status Node::Impl::CheckIdentity() {
  if (options_.cluster_id == 0 || options_.rebuild) return Status::OK();
  Status loaded = maps_->Load();
  // A database without a map: the node died between creating its store and its first map, or
  // the map was lost; either way it holds nothing it could serve as a member.
  if (loaded.IsNotFound()) return NoDatabaseError();
  if (!loaded.ok()) return loaded.WithContext("loading the cluster map");
  const uint64_t stored = maps_->Current()->cluster_id();
  if (stored != options_.cluster_id) {
    return Status::FailedPrecondition(
        "data directory " + options_.data_dir + " holds a database of cluster " +
        std::to_string(stored) + ", but this node is member " + std::to_string(options_.id) +
        " of cluster " + std::to_string(options_.cluster_id) +
        "; refusing to start (rebuild it with `shardkv cluster start-node " +
        std::to_string(options_.id) + " --rebuild`)");
  }
  return Status::OK();
}

Status Node::Impl::LoadMap() {
  Status loaded = maps_->Load();
  if (loaded.ok()) {
    auto map = maps_->Current();
    const ClusterNode* self = map->FindNode(options_.id);
    // A one-node cluster's node restarted on another address (port, or --advertise) keeps
    // serving under its new one.
    if (!options_.map_consensus && map->nodes().size() == 1 && self != nullptr &&
        self->address != address()) {
      auto moved = clustermap::WithNodeUpdated(*map, options_.id, NodeState::kUp, address());
      if (!moved.ok()) return moved.status();
      return maps_->Reset(clustermap::WithEpoch(*moved, map->epoch() + 1, options_.id));
    }
    return Status::OK();
  }
  if (!loaded.IsNotFound()) return loaded.WithContext("loading the cluster map");
  // A fresh node stays unformed (no cluster id, no map) until `cluster init` (Admin::FormCluster)
  // or `cluster join` gives it one: a node that made itself a cluster of one would have a
  // cluster id of its own, and every node started on several hosts would have a different one.
  // Nothing is persisted for it, so a restarted unformed node is unformed again.
  return Status::OK();
}

Status Node::Impl::StartConsensus() {
  if (!consensus_) return Status::OK();
  // A rebuilt node is known to the group already: it is caught up by the leader, never founds it.
  SHARDKV_RETURN_IF_ERROR(consensus_->Start(/*may_bootstrap=*/!options_.rebuild));
  auto map = maps_->Current();
  const ClusterNode* self = map ? map->FindNode(options_.id) : nullptr;
  if (map == nullptr || map->nodes().size() != 1 || self == nullptr || self->address == address()) {
    return Status::OK();
  }
  // A one-node cluster's node restarted on another address (port, or --advertise): it commits its
  // new address as the next epoch (it is the group's only voter, so it leads at once).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(consensus_->IsLeader() && consensus_->Applied()) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto applied = consensus_->Applied();
  if (!consensus_->IsLeader() || !applied) {
    return Status::Unavailable("node " + std::to_string(options_.id) +
                               " could not commit its new address: it does not lead its group");
  }
  auto moved = clustermap::WithNodeUpdated(*applied, options_.id, NodeState::kUp, address());
  if (!moved.ok()) return moved.status();
  const ClusterMap next = clustermap::WithEpoch(*moved, applied->epoch() + 1, options_.id);
  SHARDKV_RETURN_IF_ERROR(consensus_->Propose(next, std::chrono::seconds(5)));
  return maps_->Install(next);
}

Status Node::Impl::Rebuild() {
  // Marks of writes older than this are retired once the rebuild completes: it pulls them.
  const uint64_t started_ms = storage_->WallClockMs();
  // Whatever is left locally is older than the tombstone grace: keeping it could resurrect
  // deletes whose tombstones the others already collected.
  SHARDKV_RETURN_IF_ERROR(storage_->DeleteRange(TokenRange{0, UINT64_MAX}));
  std::optional<ClusterMap> newest;
  size_t foreign = 0;  // seeds of another cluster
  for (const std::string& seed : options_.seeds) {
    net::Request req;
    req.body = net::GetClusterMapRequest{};
    auto reply = peers_->CallSync(seed, std::move(req), std::chrono::milliseconds(3000));
    if (!reply.ok() || !reply->ok()) continue;
    const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
    if (body == nullptr) continue;
    auto map = ClusterMap::Decode(body->map);
    if (!map.ok()) continue;
    if (options_.cluster_id != 0 && map->cluster_id() != options_.cluster_id) {
      spdlog::warn("rebuild: seed {} is in cluster {}, not {}; ignoring it", seed,
                   map->cluster_id(), options_.cluster_id);
      ++foreign;
      continue;
    }
    if (!newest || map->epoch() > newest->epoch()) newest = *map;
  }
  if (!newest && foreign > 0) {
    return Status::FailedPrecondition("rebuild: no seed is in cluster " +
                                      std::to_string(options_.cluster_id) + " (" +
                                      std::to_string(foreign) + " answered for another cluster)");
  }
  if (!newest) return Status::Unavailable("rebuild: no seed answered with a cluster map");
  const ClusterNode* self = newest->FindNode(options_.id);
  if (self == nullptr) {
    return Status::FailedPrecondition("rebuild: node " + std::to_string(options_.id) +
                                      " is not in the cluster map");
  }
  if (self->address != address()) {
    return Status::FailedPrecondition("rebuild: the map has node " + std::to_string(options_.id) +
                                      " at " + self->address + ", not " + address());
  }
  SHARDKV_RETURN_IF_ERROR(maps_->Reset(*newest));
  auto pulled = stream_sink_->Rebuild(*newest);
  if (!pulled.ok()) return pulled.status();
  spdlog::info("node {} rebuilt: {} entries from its replicas", options_.id, *pulled);
  return repair_->RecordRebuild(started_ms);
}

Status Node::Impl::StartMetrics() {
  std::error_code ec;
  // A previous run's port must not be mistaken for this one's (a launcher waits for the file).
  fs::remove(fs::path(options_.data_dir) / "metrics_port", ec);
  if (options_.metrics_listen.empty()) return Status::OK();
  metrics::MetricsServerOptions mo;
  SHARDKV_RETURN_IF_ERROR(
      node::ParseHostPort(options_.metrics_listen, "--metrics-listen", &mo.host, &mo.port));
  metrics_host_ = mo.host;
  SHARDKV_RETURN_IF_ERROR(node::CheckListenerProtected("--metrics-listen", mo.host, options_));
  metrics_source_ = std::make_unique<node::MetricsSource>(
      node::MetricsSourceDeps{options_.id, service_.get(), &stats_, storage_.get(), maps_.get()});
  metrics::MetricsHandlers handlers;
  handlers.metrics = [this] { return metrics_source_->Render(); };
  handlers.ready = [this] { return metrics_source_->Ready(); };
  metrics_server_ = std::make_unique<metrics::MetricsServer>(mo, std::move(handlers));
  return metrics_server_->Start();
}

Status Node::Impl::WritePortFile() {
  // `port` is the bound port (a launcher on this host connects to it); `address` is what the
  // cluster map records for this node (the advertised address, or the bound one). metrics_port
  // first: a launcher that sees `port` may read it at once.
  if (metrics_server_) {
    SHARDKV_RETURN_IF_ERROR(
        WriteFileAtomically("metrics_port", std::to_string(metrics_port()) + "\n"));
  }
  SHARDKV_RETURN_IF_ERROR(WriteFileAtomically("port", std::to_string(port()) + "\n"));
  return WriteFileAtomically("address", address() + "\n");
}

Status Node::Impl::WriteFileAtomically(const std::string& name, const std::string& text) {
  // Written to a temporary name and renamed, so a reader never sees a partial line.
  const fs::path dir(options_.data_dir);
  const fs::path tmp = dir / (name + ".tmp");
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out) return Status::IOError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, dir / name, ec);
  if (ec) return Status::IOError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::OK();
}

void Node::Impl::HandOffLeadership() {
  if (!options_.hand_off_at_stop || !consensus_ || !consensus_->IsLeader()) return;
  if (rebalancer_) {
    Status s = rebalancer_->HandOff();
    if (!s.ok()) spdlog::warn("node {}: handing the change on: {}", options_.id, s.ToString());
  }
  if (consensus_->Voters().size() < 2) return;
  Status s = consensus_->TransferLeadership(std::chrono::seconds(2));
  if (s.ok()) {
    spdlog::info("node {}: handed consensus leadership on before stopping", options_.id);
  } else {
    spdlog::warn("node {}: leadership transfer before stopping: {}", options_.id, s.ToString());
  }
}

void Node::Impl::Stop() {
  {
    common::MutexLock lock(&mu_);
    if (stopping_) {
      while (!stopped_) lock.Wait(stopped_cv_);
      return;
    }
    stopping_ = true;
  }
  HandOffLeadership();
  // The Redis listener first: its batches run through the service and the coordinator.
  if (redis_) redis_->Stop();
  // Then the metrics listener: its handlers read every part stopped below.
  if (metrics_server_) metrics_server_->Stop();
  if (server_) server_->Stop();  // stop accepting, finish in-flight requests
  if (rebalancer_) rebalancer_->Stop();
  if (stream_sink_) stream_sink_->Stop();
  if (membership_) membership_->Stop();
  if (consensus_) consensus_->Stop();
  if (repair_) repair_->Stop();
  if (peers_) peers_->Close();
  if (stream_source_) stream_source_->Close();
  if (reconciler_) reconciler_->Stop();
  if (storage_) {
    Status s = storage_->Flush();
    if (!s.ok()) spdlog::warn("node {}: flush at shutdown: {}", options_.id, s.ToString());
    s = storage_->Close();
    if (!s.ok()) spdlog::warn("node {}: close: {}", options_.id, s.ToString());
  }
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);  // releases the flock
    lock_fd_ = -1;
  }
  // After a failed Start() this is cleanup, not the stop of a running node: saying "stopped"
  // before the caller reports why it could not start reads as if it had run.
  if (started_) spdlog::info("node {} stopped", options_.id);
  common::MutexLock lock(&mu_);
  stopped_ = true;
  stopped_cv_.notify_all();
}

StatusOr<std::unique_ptr<Node>> Node::Start(NodeOptions options) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodeOptions(options));
  auto impl = std::make_unique<Impl>(std::move(options));
  Status s = impl->Start();
  if (!s.ok()) {
    impl->Stop();
    return s;
  }
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() { impl_->Stop(); }
uint32_t Node::id() const { return impl_->id(); }
uint16_t Node::port() const { return impl_->port(); }
uint16_t Node::metrics_port() const { return impl_->metrics_port(); }
std::string Node::address() const { return impl_->address(); }
void Node::Stop() { impl_->Stop(); }
StatusOr<uint64_t> Node::Compact() { return impl_->Compact(); }
void Node::Wait() { impl_->Wait(); }

}  // namespace shardkv
