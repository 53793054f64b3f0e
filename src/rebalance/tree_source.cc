#include "rebalance/tree_source.h"

#include <utility>

#include "cluster/wire_envelope.h"

namespace shardkv::rebalance {
namespace {

constexpr auto kIdleRelease = std::chrono::seconds(60);

}  // namespace

net::RepairEntry ToRepairEntry(const storage::RangeEntry& e) {
  return net::RepairEntry{e.token,
                          e.key,
                          e.envelope.timestamp,
                          e.envelope.node_id,
                          e.envelope.tombstone,
                          e.envelope.value,
                          cluster::ExpiryToWire(e.envelope)};
}

storage::RangeEntry FromRepairEntry(net::RepairEntry e) {
  return {e.token, std::move(e.key),
          cluster::EnvelopeFromWire(e.ts, e.node_id, e.tombstone, std::move(e.value), e.expiry)};
}

StatusOr<std::vector<net::TreeNode>> TreeSource::Tree(const net::TreeQuery& q) {
  const Key key{q.session, q.first, q.last};
  if (q.release) {
    {
      common::MutexLock lock(&mu_);
      sessions_.erase(key);
    }
    if (q.repaired_ms != 0 && on_repaired_ && q.first <= q.last) {
      on_repaired_(TokenRange{q.first, q.last}, q.replicas, q.repaired_ms);
    }
    return std::vector<net::TreeNode>{};
  }
  if (refusal_) SHARDKV_RETURN_IF_ERROR(refusal_());
  const TokenRange range{q.first, q.last};
  if (!range.Valid()) return Status::InvalidArgument("hash tree range has first > last");
  auto map = maps_->Current();
  if (!map || !map->Holds(self_id_, q.first) || !map->Holds(self_id_, q.last)) {
    return Status::StaleEpoch("node " + std::to_string(self_id_) + " does not hold tokens " +
                              std::to_string(q.first) + ".." + std::to_string(q.last));
  }
  const auto now = std::chrono::steady_clock::now();
  std::shared_ptr<const storage::RangeHashTree> tree;
  size_t held = 0;
  {
    common::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      if (now - it->second.last_used > kIdleRelease) {
        it = sessions_.erase(it);
        continue;
      }
      held += it->second.tree->bytes();
      ++it;
    }
    auto it = sessions_.find(key);
    if (it != sessions_.end()) {
      it->second.last_used = now;
      tree = it->second.tree;
    }
  }
  if (!tree) {
    if (held > kMaxTreeBytes) {
      return Status::ResourceExhausted("node " + std::to_string(self_id_) + " holds " +
                                       std::to_string(held >> 20) +
                                       " MiB of repair trees already; try again later");
    }
    // Built outside the lock: a scan of a large range takes a while.
    auto built = storage::RangeHashTree::Build(storage_, range);
    if (!built.ok()) return built.status();
    tree = std::make_shared<const storage::RangeHashTree>(std::move(*built));
    common::MutexLock lock(&mu_);
    sessions_[key] = Session{tree, now};
  }
  std::vector<net::TreeNode> out;
  out.reserve(q.spans.size());
  for (const net::AeSpan& s : q.spans) {
    const auto node = tree->Node({s.first, s.last});
    out.push_back({node.hash, node.count});
  }
  return out;
}

StatusOr<net::ApplyCounts> TreeSource::Apply(const net::ApplyEntries& apply) {
  auto map = maps_->Current();
  std::vector<storage::RangeEntry> entries;
  entries.reserve(apply.entries.size());
  for (const net::RepairEntry& e : apply.entries) {
    if (!map || !map->Holds(self_id_, e.token)) {
      return Status::StaleEpoch("node " + std::to_string(self_id_) + " does not hold token " +
                                std::to_string(e.token));
    }
    entries.push_back(FromRepairEntry(e));
  }
  auto stats = storage_->ApplyBatch(entries);
  if (!stats.ok()) return stats.status();
  return net::ApplyCounts{stats->applied, stats->superseded, stats->duplicate};
}

size_t TreeSource::sessions() const {
  common::MutexLock lock(&mu_);
  return sessions_.size();
}

void TreeSource::Close() {
  common::MutexLock lock(&mu_);
  sessions_.clear();
}

}  // namespace shardkv::rebalance
