// The steps Node::Impl::Start calls (data directory lock and identity, map, consensus, rebuild,
// listeners, files) and the graceful stop (node_impl.h).
#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <unistd.h>

#include "node/atomic_file.h"
#include "node/node_impl.h"

namespace shardkv {

namespace fs = std::filesystem;

namespace {

// Held (flock) for the node's lifetime: two nodes on one data directory would share a port file
// and fight over RocksDB's own lock with a less helpful message.
constexpr char kLockFile[] = "node.lock";

}  // namespace

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
  context.ops = service_.get();
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
             "data directory " + options_.data_dir +
             " holds no database, but this node is member " + std::to_string(options_.id) +
             " of cluster " + std::to_string(options_.cluster_id) +
             "; it must not start empty: rebuild it with `shardkv cluster start-node " +
             std::to_string(options_.id) + " --rebuild`")
      .WithReason(Status::Reason::kNeedsRebuild);
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
               std::to_string(options_.id) + " --rebuild`)")
        .WithReason(Status::Reason::kNeedsRebuild);
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
  // Only now, with a map of this cluster that names this node here: a refusal above leaves the
  // data as it was. Whatever is left locally is older than the tombstone grace: keeping it could
  // resurrect deletes whose tombstones the others already collected.
  SHARDKV_RETURN_IF_ERROR(storage_->DeleteRange(TokenRange{0, UINT64_MAX}));
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
  return node::WriteFileAtomically(options_.data_dir, name, text);
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
  // Its thread reads maps_, which goes before it at destruction.
  if (gc_horizon_) gc_horizon_->StopRefresher();
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
  // After the peers: a repair waiting on one fails at once instead of waiting out its timeout.
  // The scheduler first: its step runs on the service.
  if (repair_scheduler_) repair_scheduler_->Stop();
  if (repair_service_) repair_service_->Stop();
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

}  // namespace shardkv
