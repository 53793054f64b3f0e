#include "shardkv/cluster_map.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "clustermap/cluster_map_rep.h"
#include "shardkv/hash.h"
#include "shardkv/hash_ring.h"
#include "shardkv/jump_hash.h"
#include "shardkv/shard_map.h"

namespace shardkv {
namespace {

bool SameSet(std::vector<uint32_t> a, std::vector<uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

std::string_view PlacementModeName(PlacementMode mode) {
  return mode == PlacementMode::kRing ? "ring" : "jump";
}

StatusOr<PlacementMode> ParsePlacementMode(std::string_view name) {
  if (name == "ring") return PlacementMode::kRing;
  if (name == "jump") return PlacementMode::kJump;
  return Status::InvalidArgument("unknown mode '" + std::string(name) + "' (expected ring, jump)");
}

std::string_view NodeStateName(NodeState state) {
  switch (state) {
    case NodeState::kUp:
      return "up";
    case NodeState::kJoining:
      return "joining";
    case NodeState::kLeaving:
      return "leaving";
    case NodeState::kDown:
      return "down";
  }
  return "?";
}

namespace {
Status CheckReplication(const ClusterParams& p) {
  if (p.replication_factor == 0) return Status::InvalidArgument("replication factor must be >= 1");
  if (p.write_quorum == 0 || p.write_quorum > p.replication_factor) {
    return Status::InvalidArgument("write quorum must be between 1 and the replication factor");
  }
  if (p.read_quorum == 0 || p.read_quorum > p.replication_factor) {
    return Status::InvalidArgument("read quorum must be between 1 and the replication factor");
  }
  return Status::OK();
}

// How a pending change uses the placements (cluster_map.h, change()).
bool ReadsNew(bool pending, const std::optional<ChangeRecord>& change) {
  if (!pending || !change) return false;
  const ChangeState s = change->state;
  return s == ChangeState::kReadNew || s == ChangeState::kNewOnly || s == ChangeState::kCleanup;
}
bool NewOnly(bool pending, const std::optional<ChangeRecord>& change) {
  if (!pending || !change) return false;
  const ChangeState s = change->state;
  return s == ChangeState::kNewOnly || s == ChangeState::kCleanup;
}
}  // namespace

std::string PlacementName(uint32_t node_id) { return "node-" + std::to_string(node_id); }

StatusOr<ClusterMap> ClusterMap::Build(std::shared_ptr<Rep> rep) {
  const ClusterParams& p = rep->params;
  if (rep->nodes.empty()) return Status::InvalidArgument("a cluster needs at least one node");
  SHARDKV_RETURN_IF_ERROR(CheckReplication(p));
  if (rep->pending_params) {
    const ClusterParams& q = *rep->pending_params;
    if (!rep->has_pending || q.mode != p.mode || q.vnodes != p.vnodes || q.shards != p.shards) {
      return Status::Corruption("pending params without a change, or with another placement");
    }
    SHARDKV_RETURN_IF_ERROR(CheckReplication(q).WithContext("pending params"));
  }
  if (p.vnodes == 0) return Status::InvalidArgument("vnodes must be >= 1");
  if (p.shards == 0 || p.shards > (1u << 31)) return Status::InvalidArgument("bad shard count");
  // Ceilings for any map, decoded ones included: far above what Create allows (so a map made by
  // an older build keeps loading), but low enough that a hostile or corrupt map received from a
  // peer cannot make a node allocate gigabytes building its placement.
  if (p.mode == PlacementMode::kJump && p.shards > clustermap::kMaxDecodedShards) {
    return Status::InvalidArgument("shard count " + std::to_string(p.shards) +
                                   " exceeds the ceiling " +
                                   std::to_string(clustermap::kMaxDecodedShards));
  }
  if (p.mode == PlacementMode::kRing) {
    double points = 0;
    for (const ClusterNode& n : rep->nodes)
      points += std::max(1.0, static_cast<double>(p.vnodes) * n.weight);
    if (!(points <= static_cast<double>(clustermap::kMaxDecodedRingPoints))) {
      return Status::InvalidArgument(
          "the ring would have " + std::to_string(points) + " points, above the ceiling " +
          std::to_string(clustermap::kMaxDecodedRingPoints) + "; lower vnodes or weights");
    }
  }
  std::set<uint32_t> ids;
  std::set<std::string> addresses;
  for (const ClusterNode& n : rep->nodes) {
    if (!ids.insert(n.id).second) {
      return Status::InvalidArgument("duplicate node id " + std::to_string(n.id));
    }
    if (n.address.empty() || !addresses.insert(n.address).second) {
      return Status::InvalidArgument("empty or duplicate node address '" + n.address + "'");
    }
    if (!(n.weight > 0)) {
      return Status::InvalidArgument("node " + std::to_string(n.id) + " has weight <= 0");
    }
    if (!rep->has_pending && (n.state == NodeState::kJoining || n.state == NodeState::kLeaving)) {
      return Status::Corruption("node " + std::to_string(n.id) +
                                " is joining or leaving but no change is pending");
    }
  }
  rep->current = {};
  rep->pending = {};
  Status s =
      clustermap::BuildPlacement(p, rep->nodes, /*pending=*/false, &rep->shard_rows, &rep->current);
  if (!s.ok()) return s;
  if (rep->has_pending) {
    s = clustermap::BuildPlacement(rep->pending_params.value_or(p), rep->nodes, /*pending=*/true,
                                   &rep->pending_shard_rows, &rep->pending);
    if (!s.ok()) return s.WithContext("pending placement");
  } else {
    rep->pending_shard_rows.clear();
  }
  return ClusterMap(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::Create(uint64_t cluster_id, ClusterParams params,
                                        std::vector<ClusterNode> nodes, uint32_t claimant) {
  // Only for a new cluster: a map already persisted keeps decoding whatever its size.
  if (params.mode == PlacementMode::kJump && params.shards > kMaxShards) {
    return Status::InvalidArgument("--shards " + std::to_string(params.shards) +
                                   " exceeds the maximum " + std::to_string(kMaxShards));
  }
  if (params.mode == PlacementMode::kRing && params.vnodes > kMaxVnodes) {
    return Status::InvalidArgument("--vnodes " + std::to_string(params.vnodes) +
                                   " exceeds the maximum " + std::to_string(kMaxVnodes));
  }
  auto rep = std::make_shared<Rep>();
  rep->cluster_id = cluster_id;
  rep->epoch = 1;
  rep->claimant = claimant;
  rep->params = params;
  rep->nodes = std::move(nodes);
  return Build(std::move(rep));
}

std::string ClusterMap::Encode() const { return clustermap::ClusterMapCodec::Encode(*rep_); }
StatusOr<ClusterMap> ClusterMap::Decode(std::string_view bytes) {
  return clustermap::ClusterMapCodec::Decode(bytes);
}

uint64_t ClusterMap::ContentHash() const { return hash::Xxh3(Encode()); }
uint64_t ClusterMap::cluster_id() const { return rep_->cluster_id; }
uint64_t ClusterMap::epoch() const { return rep_->epoch; }
uint32_t ClusterMap::claimant() const { return rep_->claimant; }
const ClusterParams& ClusterMap::params() const { return rep_->params; }
const std::vector<ClusterNode>& ClusterMap::nodes() const { return rep_->nodes; }
const HashRing* ClusterMap::ring() const { return rep_->current.ring.get(); }
const ShardMap* ClusterMap::shard_map() const { return rep_->current.shard_map.get(); }
const HashRing* ClusterMap::pending_ring() const { return rep_->pending.ring.get(); }
const ShardMap* ClusterMap::pending_shard_map() const { return rep_->pending.shard_map.get(); }
bool ClusterMap::has_pending() const { return rep_->has_pending; }
const ChangeRecord* ClusterMap::change() const { return rep_->change ? &*rep_->change : nullptr; }

const ClusterNode* ClusterMap::FindNode(uint32_t id) const {
  for (const ClusterNode& n : rep_->nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

const ClusterNode* ClusterMap::FindNodeByAddress(std::string_view address) const {
  for (const ClusterNode& n : rep_->nodes) {
    if (n.address == address) return &n;
  }
  return nullptr;
}

uint32_t ClusterMap::EffectiveReplicas() const { return rep_->current.replicas; }
uint32_t ClusterMap::PendingEffectiveReplicas() const { return rep_->pending.replicas; }
uint32_t ClusterMap::EffectiveWriteQuorum() const {
  return std::min(rep_->params.write_quorum, EffectiveReplicas());
}
uint32_t ClusterMap::EffectiveReadQuorum() const {
  return std::min(rep_->params.read_quorum, EffectiveReplicas());
}
const ClusterParams& ClusterMap::pending_params() const {
  return rep_->pending_params ? *rep_->pending_params : rep_->params;
}
uint32_t ClusterMap::PendingEffectiveWriteQuorum() const {
  return std::min(pending_params().write_quorum, PendingEffectiveReplicas());
}
uint32_t ClusterMap::PendingEffectiveReadQuorum() const {
  return std::min(pending_params().read_quorum, PendingEffectiveReplicas());
}
uint32_t ClusterMap::ReadQuorum() const {
  return ReadsNew(rep_->has_pending, rep_->change) ? pending_params().read_quorum
                                                   : rep_->params.read_quorum;
}
uint32_t ClusterMap::WriteQuorum(bool new_set) const {
  const bool pending = new_set || NewOnly(rep_->has_pending, rep_->change);
  return pending && rep_->has_pending ? pending_params().write_quorum : rep_->params.write_quorum;
}

uint64_t ClusterMap::TokenOf(std::string_view key) const {
  const uint64_t h = hash::Xxh3(key);
  if (rep_->params.mode == PlacementMode::kRing) return h;
  const uint64_t shard =
      static_cast<uint32_t>(JumpHash(h, static_cast<int32_t>(rep_->params.shards)));
  return (shard << 32) | (h & 0xffffffffu);
}

std::vector<uint32_t> ClusterMap::Replicas(uint64_t token) const {
  return rep_->current.Replicas(token);
}

std::vector<uint32_t> ClusterMap::PendingReplicas(uint64_t token) const {
  if (!rep_->has_pending) return {};
  return rep_->pending.Replicas(token);
}

std::vector<uint32_t> ClusterMap::ReadReplicas(uint64_t token) const {
  if (ReadsNew(rep_->has_pending, rep_->change)) {
    return rep_->pending.Replicas(token);
  }
  return rep_->current.Replicas(token);
}

void ClusterMap::WriteReplicas(uint64_t token, std::vector<uint32_t>* old_set,
                               std::vector<uint32_t>* new_set) const {
  new_set->clear();
  if (!rep_->has_pending) {
    *old_set = rep_->current.Replicas(token);
    return;
  }
  if (NewOnly(rep_->has_pending, rep_->change)) {
    *old_set = rep_->pending.Replicas(token);
    return;
  }
  *old_set = rep_->current.Replicas(token);
  auto n = rep_->pending.Replicas(token);
  // A token whose replica set does not change needs no second quorum.
  if (!SameSet(*old_set, n)) *new_set = std::move(n);
}

bool ClusterMap::Holds(uint32_t node, uint64_t token) const {
  auto has = [node](const std::vector<uint32_t>& v) {
    return std::find(v.begin(), v.end(), node) != v.end();
  };
  if (has(rep_->current.Replicas(token))) return true;
  return rep_->has_pending && has(rep_->pending.Replicas(token));
}

ClusterMap ClusterMap::WithEpoch(uint64_t epoch, uint32_t claimant) const {
  auto rep = std::make_shared<Rep>(*rep_);
  rep->epoch = epoch;
  rep->claimant = claimant;
  return ClusterMap(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::WithNodeUpdated(uint32_t id, NodeState state,
                                                 std::string_view address) const {
  auto rep = std::make_shared<Rep>(*rep_);
  for (ClusterNode& n : rep->nodes) {
    if (n.id != id) continue;
    // Joining/leaving are set only by the change builders below: they move placements.
    if (state == NodeState::kJoining || state == NodeState::kLeaving ||
        n.state == NodeState::kJoining || n.state == NodeState::kLeaving) {
      return Status::FailedPrecondition("node " + std::to_string(id) +
                                        "'s joining/leaving state belongs to a change");
    }
    n.state = state;
    if (!address.empty()) n.address = std::string(address);
    // Addresses take no part in placement, so the derived objects stay valid; only re-check
    // address uniqueness.
    for (const ClusterNode& other : rep->nodes) {
      if (other.id != id && other.address == n.address) {
        return Status::InvalidArgument("address " + n.address + " is already node " +
                                       std::to_string(other.id) + "'s");
      }
    }
    return ClusterMap(std::move(rep));
  }
  return Status::NotFound("node " + std::to_string(id) + " is not in the cluster map");
}

StatusOr<ClusterMap> ClusterMap::WithNodeJoining(ClusterNode node) const {
  if (rep_->has_pending) return Status::FailedPrecondition("a change is already pending");
  auto rep = std::make_shared<Rep>(*rep_);
  node.state = NodeState::kJoining;
  rep->nodes.push_back(node);
  rep->has_pending = true;
  rep->pending_shard_rows.clear();
  if (rep->params.mode == PlacementMode::kJump) {
    const ShardMap* sm = shard_map();
    const uint32_t new_rf =
        std::min<uint32_t>(rep->params.replication_factor,
                           static_cast<uint32_t>(rep_->current.index_to_id.size() + 1));
    if (static_cast<uint32_t>(sm->replica_count()) == new_rf) {
      // Minimal movement: only replicas moving to the new node.
      auto added = sm->WithNodeAdded({PlacementName(node.id), node.weight});
      if (!added.ok()) return added.status();
      rep->pending_shard_rows = clustermap::RowsAsIds(*added);
    }  // else the effective RF grows: Build() creates a balanced map for the new node set
  }
  return Build(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::WithNodeLeaving(uint32_t id) const {
  if (rep_->has_pending) return Status::FailedPrecondition("a change is already pending");
  if (FindNode(id) == nullptr) {
    return Status::NotFound("node " + std::to_string(id) + " is not in the cluster map");
  }
  if (rep_->nodes.size() == 1) return Status::FailedPrecondition("cannot remove the last node");
  auto rep = std::make_shared<Rep>(*rep_);
  for (ClusterNode& n : rep->nodes) {
    if (n.id == id) n.state = NodeState::kLeaving;
  }
  rep->has_pending = true;
  rep->pending_shard_rows.clear();
  if (rep->params.mode == PlacementMode::kJump) {
    const ShardMap* sm = shard_map();
    const uint32_t new_rf = std::min<uint32_t>(rep->params.replication_factor,
                                               static_cast<uint32_t>(rep_->nodes.size() - 1));
    if (static_cast<uint32_t>(sm->replica_count()) == new_rf) {
      auto removed = sm->WithNodeRemoved(PlacementName(id));
      if (!removed.ok()) return removed.status();
      rep->pending_shard_rows = clustermap::RowsAsIds(*removed);
    }
  }
  return Build(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::WithParamsChanging(uint32_t replicas, uint32_t write_quorum,
                                                    uint32_t read_quorum) const {
  if (rep_->has_pending) return Status::FailedPrecondition("a change is already pending");
  ClusterParams q = rep_->params;
  q.replication_factor = replicas;
  q.write_quorum = write_quorum;
  q.read_quorum = read_quorum;
  SHARDKV_RETURN_IF_ERROR(CheckReplication(q));
  if (q == rep_->params) {
    return Status::InvalidArgument("the cluster already has replicas " + std::to_string(replicas) +
                                   ", write quorum " + std::to_string(write_quorum) +
                                   ", read quorum " + std::to_string(read_quorum));
  }
  auto rep = std::make_shared<Rep>(*rep_);
  rep->has_pending = true;
  rep->pending_params = q;
  rep->pending_shard_rows.clear();
  if (q.mode == PlacementMode::kJump) {
    const uint32_t count = static_cast<uint32_t>(rep_->current.index_to_id.size());
    rep->pending_shard_rows = clustermap::ResizedRows(rep_->shard_rows, rep_->nodes,
                                                      std::min(q.replication_factor, count));
  }
  return Build(std::move(rep));
}

ClusterMap ClusterMap::WithChange(ChangeRecord record) const {
  auto rep = std::make_shared<Rep>(*rep_);
  rep->change = std::move(record);
  return ClusterMap(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::WithChangeCommitted() const {
  if (!rep_->has_pending) return Status::FailedPrecondition("no change is pending");
  auto rep = std::make_shared<Rep>(*rep_);
  std::vector<ClusterNode> kept;
  for (ClusterNode n : rep->nodes) {
    if (n.state == NodeState::kLeaving) continue;
    if (n.state == NodeState::kJoining) n.state = NodeState::kUp;
    kept.push_back(std::move(n));
  }
  rep->nodes = std::move(kept);
  rep->shard_rows = rep->pending_shard_rows;
  if (rep->pending_params) rep->params = *rep->pending_params;
  rep->pending_params.reset();
  rep->has_pending = false;
  rep->pending_shard_rows.clear();
  return Build(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::WithChangeCancelled() const {
  if (!rep_->has_pending) return Status::FailedPrecondition("no change is pending");
  auto rep = std::make_shared<Rep>(*rep_);
  std::vector<ClusterNode> kept;
  for (ClusterNode n : rep->nodes) {
    if (n.state == NodeState::kJoining) continue;
    if (n.state == NodeState::kLeaving) n.state = NodeState::kUp;
    kept.push_back(std::move(n));
  }
  rep->nodes = std::move(kept);
  rep->pending_params.reset();
  rep->has_pending = false;
  rep->pending_shard_rows.clear();
  return Build(std::move(rep));
}

std::string ClusterMap::DebugString() const {
  std::ostringstream out;
  out << "cluster " << rep_->cluster_id << " epoch " << rep_->epoch << " mode "
      << PlacementModeName(rep_->params.mode) << " rf " << rep_->params.replication_factor << " w "
      << rep_->params.write_quorum << " q " << rep_->params.read_quorum;
  if (rep_->pending_params) {
    out << " -> rf " << rep_->pending_params->replication_factor << " w "
        << rep_->pending_params->write_quorum << " q " << rep_->pending_params->read_quorum;
  }
  out << " nodes [";
  for (const ClusterNode& n : rep_->nodes) {
    out << " " << n.id << "@" << n.address << ":" << NodeStateName(n.state);
  }
  out << " ]";
  if (rep_->has_pending) {
    out << " pending change "
        << (rep_->change ? ChangeStateName(rep_->change->state) : std::string_view("(no record)"));
  }
  return out.str();
}

}  // namespace shardkv
