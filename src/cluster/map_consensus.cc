// MapConsensus (map_consensus.h): the map state machine, its installer and the leader's duties.
#include "cluster/map_consensus.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>

#include "consensus/raft_log_store.h"

namespace shardkv::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// The cluster whose Raft group this node's raft/* state belongs to (decimal). Absent in a data
// directory from before consensus: such a node bootstraps the group from its map.
constexpr std::string_view kGroupKey = "cluster/consensus_cluster";

// The sender id of an encoded Raft message: u8 format, u8 type, u64 LE id (raft_codec.h).
uint64_t SenderOf(std::string_view message) {
  if (message.size() < 10) return 0;
  uint64_t id = 0;
  for (int i = 7; i >= 0; --i) id = (id << 8) | static_cast<uint8_t>(message[2 + i]);
  return id;
}

}  // namespace

std::vector<consensus::RaftServer> DesiredConfiguration(const ClusterMap& map, size_t max_voters) {
  std::vector<ClusterNode> nodes = map.nodes();
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  std::vector<consensus::RaftServer> out;
  size_t voters = 0;
  for (const ClusterNode& n : nodes) {
    const bool vote = n.state == NodeState::kUp && voters < max_voters;
    voters += vote ? 1 : 0;
    out.push_back(
        {n.id, n.address, vote ? consensus::RaftRole::kVoter : consensus::RaftRole::kStandby});
  }
  return out;
}

MapConsensus::MapConsensus(MapConsensusOptions options, storage::Storage* storage, MapStore* maps,
                           net::PeerPool* peers)
    : options_(options), storage_(storage), maps_(maps), peers_(peers) {
  common::MutexLock lock(&mu_);
  started_ = Clock::now();
}

MapConsensus::~MapConsensus() { Stop(); }

Status MapConsensus::Start(bool may_bootstrap) {
  {
    common::MutexLock lock(&mu_);
    started_ = Clock::now();
  }
  installer_ = std::thread([this] { InstallLoop(); });
  leader_loop_ = std::thread([this] { LeaderLoop(); });
  auto map = maps_->Current();
  if (!map) return Status::OK();       // unformed: Adopt starts the replica
  if (running()) return Status::OK();  // adopted while the node was starting
  consensus::RaftLogStore store(storage_);
  auto empty = store.Empty();
  if (!empty.ok()) return empty.status();
  auto group = storage_->GetAux(storage::AuxColumn::kMeta, kGroupKey);
  const std::string cluster = std::to_string(map->cluster_id());
  if (!group.ok() && !group.status().IsNotFound()) return group.status();
  if (group.ok() && *group != cluster) {
    // Adopted into another cluster and stopped before that finished: start over, empty.
    SHARDKV_RETURN_IF_ERROR(store.Wipe());
    SHARDKV_RETURN_IF_ERROR(storage_->PutAux(storage::AuxColumn::kMeta, kGroupKey, cluster));
    return StartReplica(nullptr);
  }
  if (!group.ok() && *empty && may_bootstrap) {
    // A data directory from before consensus: its persisted map founds the group (every member
    // does the same after pulling the newest map, so they agree on the configuration).
    spdlog::info(
        "consensus: bootstrapping the map group from epoch {} (first start with "
        "consensus)",
        map->epoch());
    SHARDKV_RETURN_IF_ERROR(storage_->PutAux(storage::AuxColumn::kMeta, kGroupKey, cluster));
    return StartReplica(map.get());
  }
  if (!group.ok()) {
    SHARDKV_RETURN_IF_ERROR(storage_->PutAux(storage::AuxColumn::kMeta, kGroupKey, cluster));
  }
  return StartReplica(nullptr);
}

Status MapConsensus::StartReplica(const ClusterMap* bootstrap_from) {
  consensus::RaftReplicaOptions ro;
  ro.id = options_.self_id;
  auto map = maps_->Current();
  const ClusterNode* self = map ? map->FindNode(options_.self_id) : nullptr;
  ro.address = self != nullptr ? self->address : "";
  ro.heartbeat_timeout = options_.heartbeat;
  ro.election_timeout = options_.election;
  ro.change_deadline = options_.change_deadline;
  ro.catch_up_timeout = options_.catch_up_timeout;
  auto replica = std::make_shared<consensus::RaftReplica>(ro, storage_, this, this);
  if (bootstrap_from != nullptr) {
    SHARDKV_RETURN_IF_ERROR(
        replica->Bootstrap(DesiredConfiguration(*bootstrap_from, options_.max_voters)));
  }
  SHARDKV_RETURN_IF_ERROR(replica->Start());
  {
    common::MutexLock lock(&mu_);
    started_ = Clock::now();
  }
  common::MutexLock lock(&replica_mu_);
  replica_ = std::move(replica);
  running_ = true;
  return Status::OK();
}

void MapConsensus::StopReplica() {
  std::shared_ptr<consensus::RaftReplica> old;
  {
    common::MutexLock lock(&replica_mu_);
    old.swap(replica_);
    running_ = false;
    fenced_ = false;
  }
  if (old) old->Stop();
}

std::shared_ptr<consensus::RaftReplica> MapConsensus::Replica() const {
  common::MutexLock lock(const_cast<common::Mutex*>(&replica_mu_));
  return replica_;
}

void MapConsensus::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (leader_loop_.joinable()) leader_loop_.join();
  StopReplica();
  if (installer_.joinable()) installer_.join();
}

Status MapConsensus::Adopt(const ClusterMap& map) {
  const std::string cluster = std::to_string(map.cluster_id());
  auto group = storage_->GetAux(storage::AuxColumn::kMeta, kGroupKey);
  if (group.ok() && *group == cluster && running()) return Status::OK();
  StopReplica();
  {
    common::MutexLock lock(&mu_);
    applied_.reset();
    to_install_.clear();
  }
  consensus::RaftLogStore store(storage_);
  SHARDKV_RETURN_IF_ERROR(store.Wipe());
  SHARDKV_RETURN_IF_ERROR(storage_->PutAux(storage::AuxColumn::kMeta, kGroupKey, cluster));
  // Founding members bootstrap the same configuration from the same epoch-1 map; a node joining
  // a running cluster starts empty and gets the log from the leader once it adds it.
  spdlog::info("consensus: {} the map group of cluster {}",
               map.epoch() == 1 ? "founding" : "joining", map.cluster_id());
  return StartReplica(map.epoch() == 1 ? &map : nullptr);
}

void MapConsensus::Receive(std::string message) {
  const uint64_t sender = SenderOf(message);
  {
    common::MutexLock lock(&mu_);
    if (sender != 0 && sender <= UINT32_MAX) {
      heard_[static_cast<uint32_t>(sender)] = Clock::now();
      if (sender == leader_id_) leader_contact_ = Clock::now();
    }
  }
  if (auto r = Replica()) r->Receive(std::move(message));
}

bool MapConsensus::running() const { return running_.load(); }

bool MapConsensus::IsLeader() const {
  common::MutexLock lock(&mu_);
  return leader_;
}

uint32_t MapConsensus::LeaderId() const {
  common::MutexLock lock(&mu_);
  return leader_id_;
}

std::string MapConsensus::LeaderAddress() const {
  const uint32_t id = LeaderId();
  auto map = maps_->Current();
  const ClusterNode* n = map && id != 0 ? map->FindNode(id) : nullptr;
  return n != nullptr ? n->address : "";
}

std::vector<uint32_t> MapConsensus::Voters() const {
  common::MutexLock lock(&mu_);
  return voters_;
}

std::shared_ptr<const ClusterMap> MapConsensus::Applied() const {
  common::MutexLock lock(&mu_);
  return applied_;
}

bool MapConsensus::HeardWithin(uint32_t id, std::chrono::milliseconds within) const {
  if (id == options_.self_id) return true;
  common::MutexLock lock(&mu_);
  auto it = heard_.find(id);
  return it != heard_.end() && Clock::now() - it->second < within;
}

Status MapConsensus::Propose(const ClusterMap& next, std::chrono::milliseconds timeout) {
  auto r = Replica();
  if (!r)
    return Status::Unavailable("node " + std::to_string(options_.self_id) +
                               " has no consensus replica");
  Status s = r->ProposeSync(next.Encode(), timeout);
  if (!s.ok()) return s;
  auto applied = Applied();
  if (!applied || applied->ContentHash() != next.ContentHash()) {
    return Status(Status::Code::kAborted, Status::Reason::kSuperseded,
                  "superseded: epoch " + std::to_string(next.epoch()) +
                      " was decided otherwise (applied epoch " +
                      std::to_string(applied ? applied->epoch() : 0) + ")");
  }
  return Status::OK();
}

Status MapConsensus::TransferLeadership(std::chrono::milliseconds timeout) {
  auto r = Replica();
  if (!r) return Status::Unavailable("no consensus replica");
  Status s = r->TransferLeadershipSync(0, timeout);
  if (s.ok()) {
    // Until the leader loop's next tick, say what we know: not us.
    common::MutexLock lock(&mu_);
    leader_ = false;
    leader_id_ = 0;
  }
  return s;
}

bool MapConsensus::Young() const {
  common::MutexLock lock(&mu_);
  return Clock::now() - started_ < options_.lease + 2 * options_.election;
}

Status MapConsensus::Fence() const {
  if (!fenced_.load(std::memory_order_relaxed)) return Status::OK();
  common::MutexLock lock(&mu_);
  return ComputeFence();
}

Status MapConsensus::ComputeFence() const {
  if (!running()) return Status::OK();
  if (leader_) return Status::OK();
  const auto now = Clock::now();
  // A replica that just started has had no time to hear a leader: an election takes one to two
  // election timeouts.
  if (now - started_ < options_.lease + 2 * options_.election) return Status::OK();
  if (now - leader_contact_ < options_.lease) return Status::OK();
  // The others could not form a majority without this node (two voters or fewer): fencing it
  // would only stop the cluster, and no map can change meanwhile anyway.
  const bool voter = std::find(voters_.begin(), voters_.end(), options_.self_id) != voters_.end();
  const size_t n = voters_.size();
  if (voter && n - 1 < n / 2 + 1) return Status::OK();
  return Status::Unavailable("fenced: node " + std::to_string(options_.self_id) +
                             " has not heard from a cluster leader for " +
                             std::to_string(options_.lease.count()) +
                             " ms (no majority of voters reachable); it does not coordinate "
                             "until it does");
}

consensus::RaftStatus MapConsensus::status() const {
  auto r = Replica();
  return r ? r->status() : consensus::RaftStatus{};
}

void MapConsensus::Accept(std::shared_ptr<const ClusterMap> map) {
  applied_ = map;
  to_install_.push_back(std::move(map));
  wake_.notify_all();
}

void MapConsensus::Apply(uint64_t index, std::string_view command) {
  auto map = ClusterMap::Decode(command);
  if (!map.ok()) {
    spdlog::warn("consensus: entry {} is not a cluster map ({}); ignored", index,
                 map.status().ToString());
    return;
  }
  common::MutexLock lock(&mu_);
  // Deterministic on every replica: the first map anchors the group, then only the next epoch
  // of the same cluster counts. A proposal made from a stale map is a no-op.
  if (applied_ &&
      (map->cluster_id() != applied_->cluster_id() || map->epoch() != applied_->epoch() + 1)) {
    return;
  }
  Accept(std::make_shared<const ClusterMap>(std::move(*map)));
}

std::string MapConsensus::Snapshot() {
  common::MutexLock lock(&mu_);
  return applied_ ? applied_->Encode() : std::string();
}

Status MapConsensus::Restore(std::string_view snapshot) {
  common::MutexLock lock(&mu_);
  if (snapshot.empty()) {
    applied_.reset();
    return Status::OK();
  }
  auto map = ClusterMap::Decode(snapshot);
  if (!map.ok()) return map.status().WithContext("consensus snapshot");
  Accept(std::make_shared<const ClusterMap>(std::move(*map)));
  return Status::OK();
}

void MapConsensus::Reset() {
  // The installer keeps what it has queued: it skips maps older than the store's anyway.
  common::MutexLock lock(&mu_);
  applied_.reset();
}

void MapConsensus::Send(uint64_t to, const std::string& address, std::string message) {
  // The map's address, not the configuration's: a node may have moved since it was added.
  auto map = maps_->Current();
  const ClusterNode* n =
      map && to <= UINT32_MAX ? map->FindNode(static_cast<uint32_t>(to)) : nullptr;
  const std::string target = n != nullptr ? n->address : address;
  if (target.empty()) return;
  net::Request req;
  req.cluster_id = map ? map->cluster_id() : 0;
  req.body = net::RaftMessageRequest{std::move(message)};
  peers_->Call(target, std::move(req), std::chrono::milliseconds(1000),
               [](StatusOr<net::Response>) {});
}

void MapConsensus::InstallLoop() {
  for (;;) {
    std::shared_ptr<const ClusterMap> map;
    {
      common::MutexLock lock(&mu_);
      while (!stopping_ && to_install_.empty()) lock.Wait(wake_);
      if (to_install_.empty()) return;
      map = std::move(to_install_.front());
      to_install_.pop_front();
    }
    auto current = maps_->Current();
    if (current && current->cluster_id() == map->cluster_id() && current->epoch() >= map->epoch()) {
      continue;  // already there (a replay after a restart, or installed by a push)
    }
    if (map->FindNode(options_.self_id) == nullptr) {
      // This node was removed: it keeps the map as a departing node and stops serving.
      spdlog::info("consensus: epoch {} removes this node", map->epoch());
    }
    Status s = maps_->Install(*map);
    if (!s.ok()) {
      spdlog::warn("consensus: installing committed epoch {}: {}", map->epoch(), s.ToString());
    }
  }
}

void MapConsensus::LeaderLoop() {
  for (;;) {
    {
      common::MutexLock lock(&mu_);
      const auto tick_end = Clock::now() + options_.tick;
      while (!stopping_) {
        if (!lock.WaitUntil(wake_, tick_end)) break;
      }
      if (stopping_) return;
    }
    auto r = Replica();
    if (!r) continue;
    consensus::RaftStatus st = r->status();
    const bool leads = st.state == consensus::RaftStatus::State::kLeader;
    std::shared_ptr<const ClusterMap> applied;
    {
      common::MutexLock lock(&mu_);
      if (leads != leader_ || leader_id_ != st.leader_id) {
        spdlog::info("consensus: {} (term {})",
                     leads               ? std::string("this node leads")
                     : st.leader_id == 0 ? std::string("no leader")
                                         : "node " + std::to_string(st.leader_id) + " leads",
                     st.term);
      }
      leader_ = leads;
      if (leads) leader_contact_ = Clock::now();
      if (leader_id_ != st.leader_id && st.leader_id != 0 && !leads) {
        // A leader newly known: count from its last message, if any arrived.
        auto it = heard_.find(static_cast<uint32_t>(st.leader_id));
        if (it != heard_.end()) leader_contact_ = std::max(leader_contact_, it->second);
      }
      leader_id_ = static_cast<uint32_t>(st.leader_id);
      if (!st.configuration.empty()) {
        voters_.clear();
        for (const auto& s : st.configuration) {
          if (s.role == consensus::RaftRole::kVoter) voters_.push_back(static_cast<uint32_t>(s.id));
        }
      }
      applied = applied_;
      fenced_ = !ComputeFence().ok();
      store_error_ = st.recovering ? st.last_error : std::string();
      store_errors_ = st.disk_errors;
      recoveries_ = st.recoveries;
      if (!leads) waiting_.clear();  // only the leader changes the configuration
    }
    if (!leads) continue;
    if (!applied) {
      // The first map of the group: this node's (formation, or the persisted map of a data
      // directory from before consensus). Every later one is the applied epoch + 1.
      auto anchor = maps_->Current();
      if (!anchor) continue;
      Status s = r->ProposeSync(anchor->Encode(), std::chrono::milliseconds(3000));
      if (s.ok()) spdlog::info("consensus: epoch {} anchors the map group", anchor->epoch());
      continue;
    }
    Reconcile(st, *applied);
  }
}

}  // namespace shardkv::cluster
