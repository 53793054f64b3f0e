#include "shardkv/node.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "cluster/membership.h"
#include "cluster/peer_pool.h"
#include "net/server.h"
#include "node/kv_service.h"
#include "node/node_stats.h"
#include "rebalance/rebalancer.h"
#include "rebalance/reconciler.h"
#include "rebalance/stream_sink.h"
#include "rebalance/stream_source.h"
#include "storage/storage.h"

namespace shardkv {

namespace fs = std::filesystem;

class Node::Impl {
 public:
  explicit Impl(NodeOptions options) : options_(std::move(options)) {}

  Status Start();
  void Stop();
  void Wait() {
    std::unique_lock lock(mu_);
    stopped_cv_.wait(lock, [&] { return stopped_; });
  }
  uint16_t port() const { return server_ ? server_->bound_port() : 0; }
  std::string address() const { return host_ + ":" + std::to_string(port()); }
  uint32_t id() const { return options_.id; }
  StatusOr<uint64_t> Compact() {
    SHARDKV_RETURN_IF_ERROR(storage_->Flush());
    SHARDKV_RETURN_IF_ERROR(storage_->CompactRange(TokenRange{0, UINT64_MAX}));
    return storage_->TombstonesDropped();
  }

 private:
  Status WritePortFile();
  Status LoadOrBootstrapMap();
  Status Rebuild();

  NodeOptions options_;
  std::string host_;
  std::unique_ptr<Storage> storage_;
  std::unique_ptr<MapStore> maps_;
  std::unique_ptr<HintStore> hints_;
  std::unique_ptr<PeerPool> peers_;
  std::shared_ptr<Coordinator> coordinator_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<rebalance::Reconciler> reconciler_;
  std::unique_ptr<rebalance::StreamSource> stream_source_;
  std::unique_ptr<rebalance::StreamSink> stream_sink_;
  std::unique_ptr<rebalance::Rebalancer> rebalancer_;
  NodeStats stats_;
  std::unique_ptr<KvService> service_;
  std::unique_ptr<net::Server> server_;

  std::mutex mu_;
  std::condition_variable stopped_cv_;
  bool stopping_ = false;  // GUARDED_BY(mu_)
  bool stopped_ = false;   // GUARDED_BY(mu_)
};

namespace {

// Splits "host:port"; the host may be empty (meaning 127.0.0.1) or a bracketed IPv6 address.
Status ParseListen(const std::string& listen, std::string* host, uint16_t* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument("listen address '" + listen + "' is not host:port");
  }
  *host = listen.substr(0, colon);
  if (host->empty()) *host = "127.0.0.1";
  if (host->size() > 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  const std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(p) > 65535) {
    return Status::InvalidArgument("listen address '" + listen + "' has a bad port");
  }
  *port = static_cast<uint16_t>(std::stoul(p));
  return Status::OK();
}

}  // namespace

Status Node::Impl::Start() {
  if (options_.data_dir.empty()) return Status::InvalidArgument("a data directory is required");
  uint16_t port = 0;
  SHARDKV_RETURN_IF_ERROR(ParseListen(options_.listen, &host_, &port));
  std::error_code ec;
  fs::create_directories(options_.data_dir, ec);
  if (ec) {
    return Status::IOError("cannot create data directory " + options_.data_dir + ": " +
                           ec.message());
  }

  StorageOptions so;
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
  auto storage = Storage::Open((fs::path(options_.data_dir) / "db").string(), so);
  if (!storage.ok()) return storage.status().WithContext("opening " + options_.data_dir);
  storage_ = std::move(storage).value();
  maps_ = std::make_unique<MapStore>(storage_.get());

  hints_ = std::make_unique<HintStore>(storage_.get(), options_.tombstone_grace_ms, [] {
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  });
  SHARDKV_RETURN_IF_ERROR(hints_->Load());
  peers_ = std::make_unique<PeerPool>(1);
  CoordinatorOptions co;
  co.self_id = options_.id;
  coordinator_ =
      std::make_shared<Coordinator>(co, storage_.get(), maps_.get(), peers_.get(), hints_.get());
  MembershipOptions mo;
  mo.self_id = options_.id;
  membership_ =
      std::make_unique<Membership>(mo, maps_.get(), peers_.get(), coordinator_, hints_.get());

  reconciler_ = std::make_unique<rebalance::Reconciler>(options_.id, storage_.get());
  reconciler_->Attach(maps_.get());
  reconciler_->Start();
  stream_source_ =
      std::make_unique<rebalance::StreamSource>(options_.id, storage_.get(), maps_.get());
  rebalance::StreamSinkOptions sink_options;
  sink_options.self_id = options_.id;
  stream_sink_ = std::make_unique<rebalance::StreamSink>(sink_options, storage_.get(), maps_.get(),
                                                         peers_.get(), stream_source_.get());
  rebalance::RebalancerOptions rebalancer_options;
  rebalancer_options.self_id = options_.id;
  rebalancer_ = std::make_unique<rebalance::Rebalancer>(rebalancer_options, maps_.get(),
                                                        peers_.get(), membership_.get());
  net::ServerOptions server_options;
  server_options.host = host_;
  server_options.port = port;
  server_options.io_threads = std::max(1, options_.io_threads);
  server_options.codec.max_frame_bytes = options_.max_frame_bytes;
  KvServiceDeps deps;
  deps.self_id = options_.id;
  deps.storage = storage_.get();
  deps.maps = maps_.get();
  deps.stats = &stats_;
  deps.coordinator = coordinator_;
  deps.membership = membership_.get();
  deps.hints = hints_.get();
  deps.server_stats = [this] { return server_->stats(); };
  deps.stream_source = stream_source_.get();
  deps.stream_sink = stream_sink_.get();
  deps.admin = [this](net::AdminRequest request, std::function<void(net::ResponseBody)> done) {
    rebalancer_->HandleAdmin(std::move(request), std::move(done));
  };
  deps.extra_counters = [this](std::map<std::string, int64_t>* counters) {
    rebalancer_->AddCounters(counters);
    (*counters)["stream_tasks_resumed"] = static_cast<int64_t>(stream_sink_->resumed_tasks());
    (*counters)["stream_entries_pulled"] = static_cast<int64_t>(stream_sink_->entries_pulled());
    (*counters)["ranges_dropped"] = static_cast<int64_t>(reconciler_->ranges_dropped());
  };
  service_ = std::make_unique<KvService>(
      std::move(deps), KvServiceLimits{options_.max_key_bytes, options_.max_value_bytes});
  server_ = std::make_unique<net::Server>(server_options, service_.get());
  SHARDKV_RETURN_IF_ERROR(server_->Start());
  if (options_.rebuild) {
    SHARDKV_RETURN_IF_ERROR(Rebuild());
  } else {
    SHARDKV_RETURN_IF_ERROR(LoadOrBootstrapMap());
  }
  // A restarted member first learns the newest map from its peers, then serves (design.md
  // "Propagation"); the server already answers ping and getClusterMap meanwhile.
  membership_->FetchNewestMap(std::chrono::milliseconds(1000));
  membership_->Start();
  stream_sink_->Start();
  rebalancer_->Start();
  service_->SetReady(true);
  SHARDKV_RETURN_IF_ERROR(WritePortFile());
  spdlog::info("node {} listening on {} (data {})", options_.id, address(), options_.data_dir);
  return Status::OK();
}

Status Node::Impl::LoadOrBootstrapMap() {
  Status loaded = maps_->Load();
  if (loaded.ok()) {
    auto map = maps_->Current();
    const ClusterNode* self = map->FindNode(options_.id);
    // A standalone node restarted on another port keeps serving under its new address.
    if (map->nodes().size() == 1 && self != nullptr && self->address != address()) {
      auto moved = map->WithNodeUpdated(options_.id, NodeState::kUp, address());
      if (!moved.ok()) return moved.status();
      return maps_->Reset(moved->WithEpoch(map->epoch() + 1, options_.id));
    }
    return Status::OK();
  }
  if (!loaded.IsNotFound()) return loaded.WithContext("loading the cluster map");
  // A fresh node is a standalone one-node cluster until a cluster adopts it.
  std::random_device rd;
  const uint64_t cluster_id = (uint64_t{rd()} << 32) | rd();
  ClusterParams params;
  params.replication_factor = params.write_quorum = params.read_quorum = 1;
  auto map = ClusterMap::Create(cluster_id == 0 ? 1 : cluster_id, params,
                                {{options_.id, address(), 1.0, NodeState::kUp}}, options_.id);
  if (!map.ok()) return map.status();
  return maps_->Reset(*map);
}

Status Node::Impl::Rebuild() {
  if (options_.seeds.empty()) return Status::InvalidArgument("--rebuild needs --seeds");
  // Whatever is left locally is older than the tombstone grace: keeping it could resurrect
  // deletes whose tombstones the others already collected.
  SHARDKV_RETURN_IF_ERROR(storage_->DeleteRange(TokenRange{0, UINT64_MAX}));
  std::optional<ClusterMap> newest;
  for (const std::string& seed : options_.seeds) {
    net::Request req;
    req.body = net::GetClusterMapRequest{};
    auto reply = peers_->CallSync(seed, std::move(req), std::chrono::milliseconds(3000));
    if (!reply.ok() || !reply->ok()) continue;
    const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
    if (body == nullptr) continue;
    auto map = ClusterMap::Decode(body->map);
    if (map.ok() && (!newest || map->epoch() > newest->epoch())) newest = *map;
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
  return Status::OK();
}

Status Node::Impl::WritePortFile() {
  // Written to a temporary name and renamed, so a reader never sees a partial number.
  const fs::path dir(options_.data_dir);
  const fs::path tmp = dir / "port.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port() << "\n";
    if (!out) return Status::IOError("cannot write " + tmp.string());
  }
  std::error_code ec;
  fs::rename(tmp, dir / "port", ec);
  if (ec) return Status::IOError("cannot rename " + tmp.string() + ": " + ec.message());
  return Status::OK();
}

void Node::Impl::Stop() {
  {
    std::unique_lock lock(mu_);
    if (stopping_) {
      stopped_cv_.wait(lock, [&] { return stopped_; });
      return;
    }
    stopping_ = true;
  }
  if (server_) server_->Stop();  // stop accepting, finish in-flight requests
  if (rebalancer_) rebalancer_->Stop();
  if (stream_sink_) stream_sink_->Stop();
  if (membership_) membership_->Stop();
  if (peers_) peers_->Close();
  if (stream_source_) stream_source_->Close();
  if (reconciler_) reconciler_->Stop();
  if (storage_) {
    Status s = storage_->Flush();
    if (!s.ok()) spdlog::warn("node {}: flush at shutdown: {}", options_.id, s.ToString());
    s = storage_->Close();
    if (!s.ok()) spdlog::warn("node {}: close: {}", options_.id, s.ToString());
  }
  spdlog::info("node {} stopped", options_.id);
  std::lock_guard lock(mu_);
  stopped_ = true;
  stopped_cv_.notify_all();
}

StatusOr<std::unique_ptr<Node>> Node::Start(NodeOptions options) {
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
std::string Node::address() const { return impl_->address(); }
void Node::Stop() { impl_->Stop(); }
StatusOr<uint64_t> Node::Compact() { return impl_->Compact(); }
void Node::Wait() { impl_->Wait(); }

}  // namespace shardkv
