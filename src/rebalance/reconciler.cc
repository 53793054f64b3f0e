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
  for (const TokenRange& r : ranges) {
    SHARDKV_RETURN_IF_ERROR(storage_->DeleteRange(r).WithContext("dropping leftovers"));
  }
  if (!ranges.empty()) {
    spdlog::info("change {}: cleared {} incoming ranges of leftovers before joint writes", change,
                 ranges.size());
  }
  return Status::OK();
}

void Reconciler::AfterPublish(const ClusterMap* old, const ClusterMap& next) {
  if (old == nullptr || next.FindNode(self_id_) == nullptr) return;
  const auto before = HeldRanges(*old, self_id_, true);
  const auto after = HeldRanges(next, self_id_, true);
  const auto lost = Subtract(before, after);
  if (lost.empty()) return;
  uint64_t dropped = 0;
  for (const TokenRange& r : lost) {
    Status s = storage_->DeleteRange(r);
    if (!s.ok()) {
      spdlog::error("cleanup of a lost range failed: {}", s.ToString());
      continue;
    }
    ++dropped;
  }
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
