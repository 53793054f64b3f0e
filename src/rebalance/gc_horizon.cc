#include "rebalance/gc_horizon.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <sstream>

#include "rebalance/plan.h"

namespace shardkv::rebalance {
namespace {

std::string KeyOf(uint64_t first) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, first);
  return std::string(GcHorizon::kMetaPrefix) + buf;
}

std::string Encode(uint64_t last, uint64_t horizon_ms, const std::vector<uint32_t>& replicas) {
  std::string out = std::to_string(last) + " " + std::to_string(horizon_ms) + " ";
  for (size_t i = 0; i < replicas.size(); ++i) {
    out += (i == 0 ? "" : ",") + std::to_string(replicas[i]);
  }
  return out;
}

// "<last> <horizon> <ids,>"; false if it does not parse (the record is then ignored).
bool Decode(const std::string& text, uint64_t* last, uint64_t* horizon_ms,
            std::vector<uint32_t>* replicas) {
  std::istringstream in(text);
  std::string ids;
  if (!(in >> *last >> *horizon_ms >> ids)) return false;
  std::istringstream list(ids);
  std::string id;
  while (std::getline(list, id, ',')) {
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) return false;
    replicas->push_back(static_cast<uint32_t>(std::stoul(id)));
  }
  std::sort(replicas->begin(), replicas->end());
  return !replicas->empty();
}

std::vector<uint32_t> Sorted(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

GcHorizon::GcHorizon(uint32_t self_id, storage::Storage* storage, std::function<uint64_t()> wall_ms)
    : self_(self_id), storage_(storage), wall_ms_(std::move(wall_ms)) {}

Status GcHorizon::Load() {
  std::map<uint64_t, Saved> records;
  std::string after;
  for (;;) {
    auto batch = storage_->ScanAux(storage::AuxColumn::kMeta, kMetaPrefix, after, 1024);
    if (!batch.ok()) return batch.status().WithContext("reading repair horizons");
    for (const auto& [key, value] : *batch) {
      Saved r;
      uint64_t first = 0;
      if (std::sscanf(key.c_str() + kMetaPrefix.size(), "%16" SCNx64, &first) != 1 ||
          !Decode(value, &r.last, &r.horizon_ms, &r.replicas)) {
        spdlog::warn("node {}: ignoring unreadable repair horizon record {}", self_, key);
        continue;
      }
      records[first] = std::move(r);
    }
    if (batch->size() < 1024) break;
    after = batch->back().first;
  }
  common::MutexLock lock(&mu_);
  records_ = std::move(records);
  return Status::OK();
}

std::map<uint64_t, GcHorizon::Saved>::const_iterator GcHorizon::Containing(
    const TokenRange& range, const std::vector<uint32_t>& replicas) const {
  auto it = records_.upper_bound(range.first);
  if (it == records_.begin()) return records_.end();
  --it;
  if (it->second.last < range.last || it->second.replicas != replicas) return records_.end();
  return it;
}

void GcHorizon::Refresh(const ClusterMap* map) {
  const uint64_t now = wall_ms_();
  common::MutexLock lock(&mu_);
  // Read under mu_: an Invalidate after this makes held_ stale again, and Publish then does
  // nothing (storage ignores an older generation too).
  refreshed_ = generation_.load();
  std::vector<Held> held;
  std::set<uint64_t> used;  // records a held range takes its horizon from
  if (map != nullptr) {
    for (const MovingRange& r : AllRanges(*map)) {
      // Only ranges whose data is here: a pending destination's stream is still arriving.
      if (std::find(r.old_set.begin(), r.old_set.end(), self_) == r.old_set.end()) continue;
      Held h{r.range, Sorted(r.old_set), 0, now};
      if (h.replicas.size() == 1) {
        h.horizon_ms = UINT64_MAX;
      } else if (auto it = Containing(h.range, h.replicas); it != records_.end()) {
        h.horizon_ms = it->second.horizon_ms;
        used.insert(it->first);
      }
      // Held before with the same set (held_ is in token order): still held since then.
      auto old = std::upper_bound(held_.begin(), held_.end(), h.range.first,
                                  [](uint64_t t, const Held& x) { return t < x.range.first; });
      if (old != held_.begin()) {
        --old;
        if (h.range.last <= old->range.last && old->replicas == h.replicas) {
          h.since_ms = old->since_ms;
        }
      }
      held.push_back(std::move(h));
    }
  }
  held_ = std::move(held);
  // Records no held range uses are dead: their range moved or its set changed.
  for (auto it = records_.begin(); it != records_.end();) {
    if (used.count(it->first) != 0) {
      ++it;
      continue;
    }
    // Best effort: one left behind matches no range, and goes at the next map or restart.
    static_cast<void>(storage_->DeleteAux(storage::AuxColumn::kMeta, KeyOf(it->first)));
    it = records_.erase(it);
  }
  Publish();
}

void GcHorizon::Record(const TokenRange& range, std::vector<uint32_t> replicas,
                       uint64_t horizon_ms) {
  replicas = Sorted(std::move(replicas));
  common::MutexLock lock(&mu_);
  // Inside one held range (held_ is in token order) with the same set.
  auto at = std::upper_bound(held_.begin(), held_.end(), range.first,
                             [](uint64_t t, const Held& x) { return t < x.range.first; });
  const bool inside = at != held_.begin() && range.last <= std::prev(at)->range.last &&
                      std::prev(at)->replicas == replicas;
  // A repair under another map (the set changed meanwhile) says nothing about this one's.
  // A new map's Refresh is pending: held_ may not be this map's ranges. Losing this record only
  // delays GC until the next repair of the range.
  if (refreshed_ != generation_.load()) return;
  if (!inside) return;
  Saved& r = records_[range.first];
  if (r.last == range.last && r.replicas == replicas && r.horizon_ms >= horizon_ms) return;
  r = Saved{range.last, horizon_ms, replicas};
  if (Status s = storage_->PutAux(storage::AuxColumn::kMeta, KeyOf(range.first),
                                  Encode(r.last, r.horizon_ms, r.replicas), /*sync=*/false);
      !s.ok()) {
    spdlog::warn("node {}: cannot record a repair horizon: {}", self_, s.ToString());
  }
  // The held ranges inside it (held_ is in token order).
  auto h = std::lower_bound(held_.begin(), held_.end(), range.first,
                            [](const Held& x, uint64_t t) { return x.range.first < t; });
  for (; h != held_.end() && h->range.last <= range.last; ++h) {
    if (h->replicas == replicas) h->horizon_ms = std::max(h->horizon_ms, horizon_ms);
  }
  Publish();
}

void GcHorizon::Publish() {
  if (refreshed_ != generation_.load()) return;  // stale: the pending Refresh publishes
  std::vector<std::pair<TokenRange, uint64_t>> horizons;
  horizons.reserve(held_.size());
  for (const Held& h : held_) horizons.emplace_back(h.range, h.horizon_ms);
  storage_->SetRepairHorizons(std::move(horizons), refreshed_);
}

void GcHorizon::Invalidate() {
  const uint64_t generation = generation_.fetch_add(1) + 1;
  storage_->InvalidateRepairHorizons(generation);
  common::MutexLock lock(&refresh_mu_);
  refresh_wanted_ = generation;
  refresh_cv_.notify_one();
}

void GcHorizon::StartRefresher(std::function<std::shared_ptr<const ClusterMap>()> current) {
  current_ = std::move(current);
  refresher_ = std::thread([this] { RefreshLoop(); });
}

void GcHorizon::RefreshLoop() {
  uint64_t done = 0;
  common::MutexLock lock(&refresh_mu_);
  for (;;) {
    while (!refresh_stop_ && refresh_wanted_ == done) lock.Wait(refresh_cv_);
    if (refresh_stop_) return;
    done = refresh_wanted_;
    lock.Unlock();
    std::shared_ptr<const ClusterMap> map = current_();  // published before the Invalidate
    Refresh(map.get());
    lock.Lock();
  }
}

void GcHorizon::StopRefresher() {
  {
    common::MutexLock lock(&refresh_mu_);
    refresh_stop_ = true;
    refresh_cv_.notify_one();
  }
  if (refresher_.joinable()) refresher_.join();
}

GcHorizon::~GcHorizon() { StopRefresher(); }

GcHorizon::Blocked GcHorizon::Blocking(uint64_t now_ms, uint64_t grace_ms,
                                       const std::function<bool(uint32_t)>& replica_ok) const {
  Blocked out;
  std::set<uint32_t> waiting;
  common::MutexLock lock(&mu_);
  for (const Held& h : held_) {
    if (h.replicas.size() < 2) continue;
    const uint64_t since = std::max(h.horizon_ms, h.since_ms);
    if (now_ms <= since || now_ms - since <= grace_ms) continue;
    ++out.ranges;
    for (uint32_t id : h.replicas) {
      if (id != self_ && replica_ok && !replica_ok(id)) waiting.insert(id);
    }
  }
  out.waiting_for.assign(waiting.begin(), waiting.end());
  return out;
}

uint64_t GcHorizon::HorizonOf(uint64_t token) const {
  common::MutexLock lock(&mu_);
  // held_ is in token order and its ranges do not overlap: a catch-up asks once per range.
  auto at = std::upper_bound(held_.begin(), held_.end(), token,
                             [](uint64_t t, const Held& x) { return t < x.range.first; });
  if (at == held_.begin() || !std::prev(at)->range.Contains(token)) return 0;
  return std::prev(at)->horizon_ms;
}

}  // namespace shardkv::rebalance
