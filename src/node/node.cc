#include "shardkv/node.h"

#include <spdlog/spdlog.h>

#include "node/node_impl.h"

namespace shardkv {

namespace fs = std::filesystem;

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
  so.fault_injection_for_test = options_.storage_fault_injection_for_test;
  // Tombstones go only once every replica was repaired since (gc_horizon.h).
  so.gc_after_repair = options_.gc_waits_for_repair_for_test;
  // A member of a known cluster must never start a fresh database: its data was lost, and
  // serving empty would answer "not found" for a third of the keys (findings row 7).
  so.create_if_missing = options_.cluster_id == 0 || options_.rebuild;
  // Whether its tombstone GC has always waited for repairs, if it does now (RepairState): a
  // rebuild's data came from other replicas, whatever they had collected.
  std::error_code unreadable;  // then not fresh: the safe side
  const bool fresh_database =
      !options_.rebuild &&
      !fs::exists(fs::path(options_.data_dir) / "db" / "CURRENT", unreadable) && !unreadable;
  auto storage = storage::Storage::Open((fs::path(options_.data_dir) / "db").string(), so);
  if (!storage.ok() && storage.status().IsNotFound()) return NoDatabaseError();
  if (!storage.ok()) return storage.status().WithContext("opening " + options_.data_dir);
  storage_ = std::move(storage).value();
  gc_horizon_ = std::make_unique<rebalance::GcHorizon>(
      options_.id, storage_.get(), [storage = storage_.get()] { return storage->WallClockMs(); });
  SHARDKV_RETURN_IF_ERROR(gc_horizon_->Load());
  maps_ = std::make_unique<cluster::MapStore>(storage_.get());
  // Not Refresh here: the hook runs under the store's install lock, and a large ring's Refresh
  // held up every install behind it, on whatever thread it came (design.md "The GC rule").
  maps_->AddAfterPublish([horizon = gc_horizon_.get()](const ClusterMap*, const ClusterMap&) {
    horizon->Invalidate();
  });
  gc_horizon_->StartRefresher([maps = maps_.get()] { return maps->Current(); });
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
  ro.gc_waits_for_repair = options_.gc_waits_for_repair_for_test;
  ro.fresh_database = fresh_database;
  ro.rebuild = options_.rebuild;
  ro.tombstone_grace_ms = options_.tombstone_grace_ms;
  ro.wall_ms = [storage = storage_.get()] { return storage->WallClockMs(); };
  repair_ = std::make_unique<cluster::RepairState>(ro, storage_.get(), maps_.get(), peers_.get(),
                                                   hints_.get());
  SHARDKV_RETURN_IF_ERROR(repair_->Load());
  cluster::CoordinatorOptions co;
  co.self_id = options_.id;
  co.read_refusal = [repair = repair_.get()](uint32_t id) { return repair->ReadRefusal(id); };
  // membership_ is made below; replica writes start only once the server runs.
  co.clock_agrees = [this](uint32_t id) { return membership_ && membership_->ClockAgrees(id); };
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
  rebalance::RepairServiceDeps repair_deps;
  repair_deps.self_id = options_.id;
  repair_deps.storage = storage_.get();
  repair_deps.maps = maps_.get();
  repair_deps.peers = peers_.get();
  repair_deps.stream_source = stream_source_.get();
  repair_deps.refusal = [repair = repair_.get()] {
    return repair->Refusal("to take part in repair");
  };
  repair_deps.replica_refusal = [repair = repair_.get()](uint32_t id) {
    return repair->ReadRefusal(id);
  };
  repair_deps.horizons = gc_horizon_.get();
  repair_deps.max_clock_offset_ms = options_.max_clock_offset_ms;
  repair_deps.wall_ms = [storage = storage_.get()] { return storage->WallClockMs(); };
  // A node that needs repair is brought back by its repairs (design.md "Needs repair").
  repair_deps.purge_refusal = [repair = repair_.get()](uint32_t id, uint64_t synced_ms) {
    return repair->PurgeRefusal(id, synced_ms);
  };
  repair_deps.record_repaired = [repair = repair_.get()](uint64_t started_ms) {
    return repair->RecordRepair(started_ms);
  };
  repair_deps.refresh_marks = [repair = repair_.get()] {
    return repair->PollPeers(std::chrono::milliseconds(1000));
  };
  repair_service_ = std::make_unique<rebalance::RepairService>(std::move(repair_deps));
  if (options_.background_repair) {
    rebalance::RepairSchedulerOptions rso;
    rso.self_id = options_.id;
    rso.period = std::chrono::milliseconds(EffectiveRepairPeriodMs(options_));
    rso.rate = options_.repair_rate;
    rso.wall_ms = [storage = storage_.get()] { return storage->WallClockMs(); };
    rso.refresh_marks = [repair = repair_.get()] {
      return repair->PollPeers(std::chrono::milliseconds(1000));
    };
    rso.client_requests = [stats = &stats_] { return stats->client_requests(); };
    rso.storage = storage_.get();
    repair_scheduler_ =
        std::make_unique<rebalance::RepairScheduler>(std::move(rso), repair_service_.get());
  }
  rebalance::RebalancerOptions rebalancer_options;
  rebalancer_options.self_id = options_.id;
  rebalancer_options.consensus = consensus_.get();
  rebalancer_options.source_refusal = co.read_refusal;
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
  deps.stream_sink = stream_sink_.get();
  deps.repair_service = repair_service_.get();
  deps.rebalancer = rebalancer_.get();
  deps.consensus = consensus_.get();
  deps.peers = peers_.get();
  deps.report = this;
  deps.max_clock_offset_ms = options_.max_clock_offset_ms;
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
  gc_horizon_->Refresh(maps_->Current().get());
  // A restarted member first learns the newest map from its peers, then serves (design.md
  // "Propagation"); the server already answers ping and getClusterMap meanwhile.
  membership_->FetchNewestMap(std::chrono::milliseconds(1000));
  // And its clock against theirs: a skewed node never stamps a write (design.md "Clock offsets").
  membership_->MeasureClocks();
  SHARDKV_RETURN_IF_ERROR(StartConsensus());
  // Before serving: a peer may have marked this node as needing repair while it was away.
  if (options_.learn_repair_marks_for_test) {
    repair_->PollPeers(std::chrono::milliseconds(1000));
    repair_->Start();
  }
  membership_->Start();
  stream_sink_->Start();
  repair_service_->Start();
  if (repair_scheduler_) repair_scheduler_->Start();
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
