#include "rebalance/reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "clustermap/cluster_map_builder.h"
#include "rebalance/plan.h"
#include "shardkv/change.h"

namespace shardkv::rebalance {
namespace {

uint64_t ChangeIdOf(const ClusterMap& map) {
  if (!map.has_pending()) return 0;
  auto record = clustermap::RecordOf(map);
  return record.ok() ? record->change_id : 0;
}

// True if both ring maps place every token on the same nodes, current and pending: a ring depends
// on the members' ids and weights, which ones join or leave, and the parameters (stage and epoch
// changes within one change, or a node marked down, keep it). Jump mode's stored shard map has
// a history of its own: never assumed equal. Equal placements lose no range, so the two
// HeldRanges walks of a large ring (~0.2 s each at 100,000 vnodes) are skipped.
bool SamePlacements(const ClusterMap& a, const ClusterMap& b) {
  if (a.params().mode != PlacementMode::kRing || a.has_pending() != b.has_pending() ||
      !(a.params() == b.params()) || !(a.pending_params() == b.pending_params()) ||
      a.nodes().size() != b.nodes().size()) {
    return false;
  }
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const ClusterNode& x = a.nodes()[i];
    const ClusterNode& y = b.nodes()[i];
    auto role = [](NodeState s) {
      return s == NodeState::kJoining ? 1 : s == NodeState::kLeaving ? 2 : 0;
    };
    if (x.id != y.id || x.weight != y.weight || role(x.state) != role(y.state)) return false;
  }
  return true;
}

}  // namespace

Reconciler::~Reconciler() { Stop(); }

void Reconciler::Start() {
  compactor_ = std::thread([this] { CompactLoop(); });
}

void Reconciler::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (compactor_.joinable()) compactor_.join();
}

void Reconciler::CompactLoop() {
  for (;;) {
    std::vector<TokenRange> ranges;
    {
      common::MutexLock lock(&mu_);
      while (!stopping_ && to_compact_.empty()) lock.Wait(wake_);
      if (stopping_) return;
      ranges.swap(to_compact_);
    }
    // One compaction over the span of everything dropped: ring arcs interleave with kept ones,
    // so per-arc calls would rewrite the same files many times.
    TokenRange span = ranges.front();
    for (const TokenRange& r : ranges) {
      span.first = std::min(span.first, r.first);
      span.last = std::max(span.last, r.last);
    }
    Status s = storage_->CompactRange(span);
    if (!s.ok()) spdlog::warn("compacting dropped ranges: {}", s.ToString());
  }
}

void Reconciler::Attach(cluster::MapStore* maps) {
  maps->SetBeforePublish(
      [this](const ClusterMap* old, const ClusterMap& next) { return BeforePublish(old, next); });
  maps->AddAfterPublish(
      [this](const ClusterMap* old, const ClusterMap& next) { AfterPublish(old, next); });
}

Status Reconciler::BeforePublish(const ClusterMap* old, const ClusterMap& next) {
  const uint64_t change = ChangeIdOf(next);
  if (change == 0) return Status::OK();
  const bool same_cluster = old != nullptr && old->cluster_id() == next.cluster_id();
  if (same_cluster && ChangeIdOf(*old) == change) return Status::OK();  // not new to this node
  const auto ranges = DestinationRanges(next, self_id_);
  if (ranges.empty()) return Status::OK();
  auto held = storage_->DeleteRanges(ranges);
  SHARDKV_RETURN_IF_ERROR(held.status().WithContext("dropping leftovers"));
  if (*held > 0) {
    spdlog::info("change {}: cleared leftovers in {} of {} incoming ranges before joint writes",
                 change, *held, ranges.size());
  }
  return Status::OK();
}

void Reconciler::AfterPublish(const ClusterMap* old, const ClusterMap& next) {
  if (old == nullptr || next.FindNode(self_id_) == nullptr) return;
  if (old->cluster_id() == next.cluster_id() && SamePlacements(*old, next)) return;
  const auto before = HeldRanges(*old, self_id_, true);
  const auto after = HeldRanges(next, self_id_, true);
  const auto lost = Subtract(before, after);
  if (lost.empty()) return;
  // One atomic write for all of them: a change of a large ring loses ~25,000 arcs here.
  auto held = storage_->DeleteRanges(lost);
  if (!held.ok()) {
    spdlog::error("cleanup of {} lost ranges failed: {}", lost.size(), held.status().ToString());
    return;
  }
  const uint64_t dropped = lost.size();
  {
    common::MutexLock lock(&mu_);
    to_compact_.insert(to_compact_.end(), lost.begin(), lost.end());
  }
  wake_.notify_all();
  ranges_dropped_ += dropped;
  Status s = storage_->PutAux(storage::AuxColumn::kMeta,
                              "rebalance/cleaned/" + std::to_string(next.epoch()),
                              std::to_string(dropped) + " ranges");
  if (!s.ok()) spdlog::warn("recording cleanup: {}", s.ToString());
  spdlog::info("epoch {}: dropped {} ranges this node no longer holds", next.epoch(), dropped);
}

}  // namespace shardkv::rebalance
