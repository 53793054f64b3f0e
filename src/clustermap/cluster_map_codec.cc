// Cap'n Proto encoding of ClusterMap (cluster_map.capnp). Every member, joining and leaving ones
// included, is listed in `current.nodes` with its state; the pending placement's shard rows go in
// `pending.shards`.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>

#include <cstring>

#include "clustermap/cluster_map.capnp.h"
#include "clustermap/cluster_map_rep.h"

namespace shardkv::clustermap {

namespace {

// 0.1.0's separate stage number (0 none, 1 joint writes, 2 read new, 3 new only), derived from
// the record's state and written only so that the field keeps its meaning for old readers.
uint8_t LegacyStage(bool pending, const std::optional<ChangeRecord>& change) {
  if (!pending) return 0;
  if (!change) return 1;
  switch (change->state) {
    case ChangeState::kReadNew:
      return 2;
    case ChangeState::kNewOnly:
    case ChangeState::kCleanup:
      return 3;
    default:
      return 1;
  }
}

}  // namespace

std::string ClusterMapCodec::Encode(const ClusterMap::Rep& r) {
  const ClusterMap::Rep* rep_ = &r;
  capnp::MallocMessageBuilder message;
  auto m = message.initRoot<mapwire::ClusterMap>();
  m.setFormatVersion(ClusterMap::kFormatVersion);
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
  m.setHasPending(rep_->has_pending);
  if (rep_->pending_params) {
    m.setPendingReplicationFactor(rep_->pending_params->replication_factor);
    m.setPendingWriteQuorum(rep_->pending_params->write_quorum);
    m.setPendingReadQuorum(rep_->pending_params->read_quorum);
  }
  m.setPendingStage(LegacyStage(rep_->has_pending, rep_->change));
  if (rep_->has_pending) {
    auto prow = m.initPending().initShards(static_cast<unsigned>(rep_->pending_shard_rows.size()));
    for (size_t s = 0; s < rep_->pending_shard_rows.size(); ++s) {
      const auto& ids = rep_->pending_shard_rows[s];
      auto row = prow[s].initNodes(static_cast<unsigned>(ids.size()));
      for (size_t k = 0; k < ids.size(); ++k) row.set(k, ids[k]);
    }
  }
  if (rep_->change) {
    const std::string record = rep_->change->Encode();
    m.setPendingDetail(
        capnp::Data::Reader(reinterpret_cast<const capnp::byte*>(record.data()), record.size()));
  }
  kj::Array<capnp::word> words = capnp::messageToFlatArray(message);
  auto bytes = words.asBytes();
  return std::string(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

StatusOr<ClusterMap> ClusterMapCodec::Decode(std::string_view bytes) {
  if (bytes.size() % sizeof(capnp::word) != 0 || bytes.empty()) {
    return Status::Corruption("cluster map: " + std::to_string(bytes.size()) +
                              " bytes is not a whole Cap'n Proto message");
  }
  // Copy into word-aligned memory: the input string need not be aligned.
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(bytes.size() / sizeof(capnp::word));
  std::memcpy(words.begin(), bytes.data(), bytes.size());
  auto rep = std::make_shared<ClusterMap::Rep>();
  std::string record;
  kj::Maybe<kj::Exception> error = kj::runCatchingExceptions([&]() {
    capnp::ReaderOptions options;
    options.traversalLimitInWords = 64 * 1024 * 1024 / sizeof(capnp::word);
    options.nestingLimit = 16;
    capnp::FlatArrayMessageReader reader(words.asPtr(), options);
    auto m = reader.getRoot<mapwire::ClusterMap>();
    if (m.getFormatVersion() != ClusterMap::kFormatVersion) {
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
    rep->has_pending = m.getHasPending();
    // pendingStage is only written (for readers of 0.1.0's schema): the record's state is the
    // stage, and 0.1.0 kept the two in step.
    if (rep->has_pending && m.getPendingReplicationFactor() != 0) {
      ClusterParams p = rep->params;
      p.replication_factor = m.getPendingReplicationFactor();
      p.write_quorum = m.getPendingWriteQuorum();
      p.read_quorum = m.getPendingReadQuorum();
      rep->pending_params = p;
    }
    if (rep->has_pending) {
      for (auto row : m.getPending().getShards()) {
        std::vector<uint32_t> ids;
        for (uint32_t id : row.getNodes()) ids.push_back(id);
        rep->pending_shard_rows.push_back(std::move(ids));
      }
    }
    auto detail = m.getPendingDetail();
    record.assign(reinterpret_cast<const char*>(detail.begin()), detail.size());
  });
  KJ_IF_MAYBE (e, error) {
    return Status::Corruption(std::string("cluster map: ") + e->getDescription().cStr());
  }
  if (rep->epoch == UINT64_MAX) {
    return Status::FailedPrecondition("cluster map format version " +
                                      std::to_string(rep->claimant) +
                                      " is unknown (this build "
                                      "reads version " +
                                      std::to_string(ClusterMap::kFormatVersion) + ")");
  }
  if (!record.empty()) {
    // A record this build cannot read makes the whole map unreadable: a node refuses it rather
    // than serve with a change whose stage it does not know (design.md "Upgrade policy").
    auto change = ChangeRecord::Decode(record);
    if (!change.ok()) return change.status().WithContext("cluster map: the change record");
    rep->change = std::move(*change);
  }
  auto built = ClusterMap::Build(std::move(rep));
  if (!built.ok()) return built.status().WithContext("cluster map");
  return built;
}

}  // namespace shardkv::clustermap
