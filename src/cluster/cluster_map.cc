#include "shardkv/cluster_map.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

#include "cluster/cluster_map.capnp.h"
#include "shardkv/hash.h"
#include "shardkv/hash_ring.h"
#include "shardkv/jump_hash.h"
#include "shardkv/shard_map.h"

namespace shardkv {

struct ClusterMap::Rep {
  uint64_t cluster_id = 0;
  uint64_t epoch = 0;
  uint32_t claimant = 0;
  ClusterParams params;
  std::vector<ClusterNode> nodes;
  // Jump mode: shard rows as node ids, primary first.
  std::vector<std::vector<uint32_t>> shard_rows;
  // Derived from the above at Build().
  std::shared_ptr<const HashRing> ring;
  std::shared_ptr<const ShardMap> shard_map;
  std::vector<uint32_t> index_to_id;  // placement node index -> node id
};

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

std::string PlacementName(uint32_t node_id) { return "node-" + std::to_string(node_id); }

StatusOr<ClusterMap> ClusterMap::Build(std::shared_ptr<Rep> rep) {
  const ClusterParams& p = rep->params;
  if (rep->nodes.empty()) return Status::InvalidArgument("a cluster needs at least one node");
  if (p.replication_factor == 0) return Status::InvalidArgument("replication factor must be >= 1");
  if (p.write_quorum == 0 || p.write_quorum > p.replication_factor) {
    return Status::InvalidArgument("write quorum must be between 1 and the replication factor");
  }
  if (p.read_quorum == 0 || p.read_quorum > p.replication_factor) {
    return Status::InvalidArgument("read quorum must be between 1 and the replication factor");
  }
  if (p.vnodes == 0) return Status::InvalidArgument("vnodes must be >= 1");
  if (p.shards == 0 || p.shards > (1u << 31)) return Status::InvalidArgument("bad shard count");
  std::set<uint32_t> ids;
  std::set<std::string> addresses;
  std::vector<NodeSpec> specs;
  for (const ClusterNode& n : rep->nodes) {
    if (!ids.insert(n.id).second) {
      return Status::InvalidArgument("duplicate node id " + std::to_string(n.id));
    }
    if (n.address.empty() || !addresses.insert(n.address).second) {
      return Status::InvalidArgument("empty or duplicate node address '" + n.address + "'");
    }
    specs.push_back({PlacementName(n.id), n.weight});
    rep->index_to_id.push_back(n.id);
  }
  if (p.mode == PlacementMode::kRing) {
    auto ring = HashRing::Build(specs, static_cast<int>(p.vnodes));
    if (!ring.ok()) return ring.status();
    rep->ring = std::move(ring).value();
  } else {
    const int rf = static_cast<int>(std::min<size_t>(p.replication_factor, specs.size()));
    StatusOr<ShardMap> sm = Status::Internal("unset");
    if (rep->shard_rows.empty()) {
      sm = ShardMap::Create(specs, static_cast<int32_t>(p.shards), rf);
      if (!sm.ok()) return sm.status();
      // Create() orders nodes by name; record rows as ids so the map is self-describing.
      for (int32_t s = 0; s < sm->shard_count(); ++s) {
        std::vector<uint32_t> row;
        for (uint32_t idx : sm->ShardReplicas(s)) {
          const std::string& name = sm->nodes()[idx].name;
          for (const ClusterNode& n : rep->nodes) {
            if (PlacementName(n.id) == name) row.push_back(n.id);
          }
        }
        rep->shard_rows.push_back(std::move(row));
      }
    }
    if (rep->shard_rows.size() != p.shards) {
      return Status::Corruption("shard map has " + std::to_string(rep->shard_rows.size()) +
                                " rows, expected " + std::to_string(p.shards));
    }
    std::vector<std::vector<uint32_t>> rows;
    rows.reserve(rep->shard_rows.size());
    for (const auto& id_row : rep->shard_rows) {
      std::vector<uint32_t> row;
      for (uint32_t id : id_row) {
        auto it = std::find(rep->index_to_id.begin(), rep->index_to_id.end(), id);
        if (it == rep->index_to_id.end()) {
          return Status::Corruption("shard map names unknown node " + std::to_string(id));
        }
        row.push_back(static_cast<uint32_t>(it - rep->index_to_id.begin()));
      }
      rows.push_back(std::move(row));
    }
    auto built = ShardMap::FromAssignment(specs, std::move(rows));
    if (!built.ok()) return built.status();
    rep->shard_map = std::make_shared<const ShardMap>(std::move(built).value());
  }
  return ClusterMap(std::move(rep));
}

StatusOr<ClusterMap> ClusterMap::Create(uint64_t cluster_id, ClusterParams params,
                                        std::vector<ClusterNode> nodes, uint32_t claimant) {
  auto rep = std::make_shared<Rep>();
  rep->cluster_id = cluster_id;
  rep->epoch = 1;
  rep->claimant = claimant;
  rep->params = params;
  rep->nodes = std::move(nodes);
  return Build(std::move(rep));
}

std::string ClusterMap::Encode() const {
  capnp::MallocMessageBuilder message;
  auto m = message.initRoot<mapwire::ClusterMap>();
  m.setFormatVersion(kFormatVersion);
  m.setClusterId(rep_->cluster_id);
  m.setEpoch(rep_->epoch);
  m.setClaimant(rep_->claimant);
  m.setMode(rep_->params.mode == PlacementMode::kRing ? mapwire::PlacementMode::RING
                                                      : mapwire::PlacementMode::JUMP);
  m.setVnodes(rep_->params.vnodes);
  m.setShardCount(rep_->params.shards);
  m.setReplicationFactor(rep_->params.replication_factor);
  m.setWriteQuorum(rep_->params.write_quorum);
  m.setReadQuorum(rep_->params.read_quorum);
  auto current = m.initCurrent();
  auto nodes = current.initNodes(static_cast<unsigned>(rep_->nodes.size()));
  for (size_t i = 0; i < rep_->nodes.size(); ++i) {
    const ClusterNode& n = rep_->nodes[i];
    nodes[i].setId(n.id);
    nodes[i].setAddress(n.address);
    nodes[i].setWeight(n.weight);
    nodes[i].setState(static_cast<mapwire::NodeState>(n.state));
  }
  auto rows = current.initShards(static_cast<unsigned>(rep_->shard_rows.size()));
  for (size_t s = 0; s < rep_->shard_rows.size(); ++s) {
    auto row = rows[s].initNodes(static_cast<unsigned>(rep_->shard_rows[s].size()));
    for (size_t k = 0; k < rep_->shard_rows[s].size(); ++k) row.set(k, rep_->shard_rows[s][k]);
  }
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

StatusOr<ClusterMap> ClusterMap::Decode(std::string_view bytes) {
  if (bytes.size() % sizeof(capnp::word) != 0 || bytes.empty()) {
    return Status::Corruption("cluster map: " + std::to_string(bytes.size()) +
                              " bytes is not a whole Cap'n Proto message");
  }
  // Copy into word-aligned memory: the input string need not be aligned.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  auto rep = std::make_shared<Rep>();
  kj::Maybe<kj::Exception> error = kj::runCatchingExceptions([&]() {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 64 * 1024 * 1024 / sizeof(capnp::word);
    options.nestingLimit = 16;
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    auto m = reader.getRoot<mapwire::ClusterMap>();
    if (m.getFormatVersion() != kFormatVersion) {
      rep->epoch = UINT64_MAX;  // marks the version error below; no exception for control flow
      rep->claimant = m.getFormatVersion();
      return;
    }
    rep->cluster_id = m.getClusterId();
    rep->epoch = m.getEpoch();
    rep->claimant = m.getClaimant();
    rep->params.mode =
        m.getMode() == mapwire::PlacementMode::RING ? PlacementMode::kRing : PlacementMode::kJump;
    rep->params.vnodes = m.getVnodes();
    rep->params.shards = m.getShardCount();
    rep->params.replication_factor = m.getReplicationFactor();
    rep->params.write_quorum = m.getWriteQuorum();
    rep->params.read_quorum = m.getReadQuorum();
    for (auto n : m.getCurrent().getNodes()) {
      const auto state = static_cast<uint16_t>(n.getState());
      rep->nodes.push_back({n.getId(), n.getAddress().cStr(), n.getWeight(),
                            state <= 3 ? static_cast<NodeState>(state) : NodeState::kDown});
    }
    for (auto row : m.getCurrent().getShards()) {
      std::vector<uint32_t> ids;
      for (uint32_t id : row.getNodes()) ids.push_back(id);
      rep->shard_rows.push_back(std::move(ids));
    }
  });
  KJ_IF_MAYBE (e, error) {
    return Status::Corruption(std::string("cluster map: ") + e->getDescription().cStr());
  }
  if (rep->epoch == UINT64_MAX) {
    return Status::FailedPrecondition("cluster map format version " +
                                      std::to_string(rep->claimant) +
                                      " is unknown (this build "
                                      "reads version " +
                                      std::to_string(kFormatVersion) + ")");
  }
  auto built = Build(std::move(rep));
  if (!built.ok()) return built.status().WithContext("cluster map");
  return built;
}

uint64_t ClusterMap::ContentHash() const { return hash::Xxh3(Encode()); }
uint64_t ClusterMap::cluster_id() const { return rep_->cluster_id; }
uint64_t ClusterMap::epoch() const { return rep_->epoch; }
uint32_t ClusterMap::claimant() const { return rep_->claimant; }
const ClusterParams& ClusterMap::params() const { return rep_->params; }
const std::vector<ClusterNode>& ClusterMap::nodes() const { return rep_->nodes; }
const HashRing* ClusterMap::ring() const { return rep_->ring.get(); }
const ShardMap* ClusterMap::shard_map() const { return rep_->shard_map.get(); }

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

uint32_t ClusterMap::EffectiveReplicas() const {
  return std::min<uint32_t>(rep_->params.replication_factor,
                            static_cast<uint32_t>(rep_->nodes.size()));
}
uint32_t ClusterMap::EffectiveWriteQuorum() const {
  return std::min(rep_->params.write_quorum, EffectiveReplicas());
}
uint32_t ClusterMap::EffectiveReadQuorum() const {
  return std::min(rep_->params.read_quorum, EffectiveReplicas());
}

uint64_t ClusterMap::TokenOf(std::string_view key) const {
  const uint64_t h = hash::Xxh3(key);
  if (rep_->params.mode == PlacementMode::kRing) return h;
  const uint64_t shard =
      static_cast<uint32_t>(JumpHash(h, static_cast<int32_t>(rep_->params.shards)));
  return (shard << 32) | (h & 0xffffffffu);
}

std::vector<uint32_t> ClusterMap::Replicas(uint64_t token) const {
  std::vector<uint32_t> out;
  if (rep_->ring) {
    std::vector<uint32_t> idx;
    if (!rep_->ring->Replicas(token, EffectiveReplicas(), &idx).ok()) return out;
    for (uint32_t i : idx) out.push_back(rep_->index_to_id[i]);
  } else {
    const int32_t shard = static_cast<int32_t>(token >> 32);
    if (shard >= rep_->shard_map->shard_count()) return out;
    for (uint32_t i : rep_->shard_map->ShardReplicas(shard)) out.push_back(rep_->index_to_id[i]);
  }
  return out;
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

std::string ClusterMap::DebugString() const {
  std::ostringstream out;
  out << "cluster " << rep_->cluster_id << " epoch " << rep_->epoch << " mode "
      << PlacementModeName(rep_->params.mode) << " rf " << rep_->params.replication_factor
      << " nodes [";
  for (const ClusterNode& n : rep_->nodes) {
    out << " " << n.id << "@" << n.address << ":" << NodeStateName(n.state);
  }
  out << " ]";
  return out.str();
}

}  // namespace shardkv
