#include "storage/tombstone_filter.h"

#include <rocksdb/compaction_filter.h>

#include <algorithm>
#include <string>
#include <utility>

#include "common/hlc.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {

uint64_t ProtectedRanges::Add(const TokenRange& range) {
  common::MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  ranges_.emplace(id, range);
  return id;
}

Status ProtectedRanges::Remove(uint64_t id) {
  common::MutexLock lock(&mu_);
  if (ranges_.erase(id) == 0) {
    return Status::NotFound("no protected token range with id " + std::to_string(id));
  }
  return Status::OK();
}

bool ProtectedRanges::Contains(uint64_t token) const {
  common::MutexLock lock(&mu_);
  for (const auto& [id, range] : ranges_) {
    if (range.Contains(token)) return true;
  }
  return false;
}

std::vector<TokenRange> ProtectedRanges::List() const {
  common::MutexLock lock(&mu_);
  std::vector<TokenRange> out;
  out.reserve(ranges_.size());
  for (const auto& [id, range] : ranges_) out.push_back(range);
  return out;
}

void RepairHorizons::Set(std::vector<std::pair<TokenRange, uint64_t>> horizons,
                         uint64_t generation) {
  std::sort(horizons.begin(), horizons.end(),
            [](const auto& a, const auto& b) { return a.first.first < b.first.first; });
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> by_first;
  for (const auto& [range, ms] : horizons) {
    if (!by_first.empty() && by_first.rbegin()->second.first >= range.first) continue;
    // In order: each insertion is at the end, so the whole set costs O(n).
    by_first.emplace_hint(by_first.end(), range.first, std::make_pair(range.last, ms));
  }
  common::MutexLock lock(&mu_);
  if (generation < generation_) return;  // computed for a replaced map
  generation_ = generation;
  by_first_.swap(by_first);  // the old ones are freed after the lock is released
}

void RepairHorizons::Invalidate(uint64_t generation) {
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> old;
  common::MutexLock lock(&mu_);
  if (generation <= generation_) return;
  generation_ = generation;
  by_first_.swap(old);
}

uint64_t RepairHorizons::Of(uint64_t token) const {
  common::MutexLock lock(&mu_);
  auto it = by_first_.upper_bound(token);
  if (it == by_first_.begin()) return 0;
  --it;
  return token <= it->second.first ? it->second.second : 0;
}

TombstoneGc::TombstoneGc(uint64_t grace_ms, std::function<uint64_t()> clock_ms,
                         std::shared_ptr<const ProtectedRanges> protected_ranges,
                         std::shared_ptr<const RepairHorizons> horizons)
    : grace_ms_(grace_ms),
      clock_ms_(std::move(clock_ms)),
      protected_ranges_(std::move(protected_ranges)),
      horizons_(std::move(horizons)) {}

TombstoneGc::Verdict TombstoneGc::Decide(std::string_view stored_key, std::string_view stored_value,
                                         uint64_t now_ms) const {
  // Cheap checks first: most entries are format-1 live values and never reach the registry.
  if (stored_value.size() < 2 ||
      (static_cast<uint8_t>(stored_value[0]) == kEnvelopeFormatV1 &&
       (static_cast<uint8_t>(stored_value[1]) & kEnvelopeFlagTombstone) == 0)) {
    return Verdict::kKeep;
  }
  EnvelopeView env;
  if (!DecodeEnvelope(stored_value, &env).ok()) return Verdict::kKeep;
  auto past_grace = [&](uint64_t ms) { return now_ms > ms && now_ms - ms > grace_ms_; };
  // A record with counter entries is kept (unless it expired, below) even where none counts over
  // its register yet: an entry can arrive before the SET whose version it counts over.
  if ((env.tombstone || env.value_absent) && env.counter_bytes.empty() && !env.hash_live &&
      !env.set_live) {
    // A tombstone, an expiry-only record, a hash of deleted fields or a set of removed members
    // only: collectable once its newest register (field, add or remove) is old.
    if (!past_grace(common::HlcClock::PhysicalMs(env.newest_version().timestamp))) {
      return Verdict::kKeep;
    }
  } else if (env.expires_at_ms == 0 || !past_grace(env.expires_at_ms) ||
             env.CounterOutlivesExpiry()) {
    // A live value or counter (a counter over a tombstone, entries not yet active, or counts from
    // nothing begun after the record expired), or one whose expiry has not been past for a whole
    // grace period: an EXPIRE or PERSIST racing it may still be in flight to this replica.
    return Verdict::kKeep;
  }
  uint64_t token = 0;
  std::string_view user_key;
  if (!DecodeDataKey(stored_key, &token, &user_key)) return Verdict::kKeep;
  if (protected_ranges_ != nullptr && protected_ranges_->Contains(token)) {
    return Verdict::kKeepProtected;
  }
  // The GC rule: a replica that missed this record may still hold the older version it
  // replaced, until a repair that compared every replica started after it was written.
  if (horizons_ != nullptr &&
      common::HlcClock::PhysicalMs(env.newest_version().timestamp) >= horizons_->Of(token)) {
    return Verdict::kKeepUnrepaired;
  }
  return Verdict::kDrop;
}

bool TombstoneGc::ShouldDrop(std::string_view stored_key, std::string_view stored_value,
                             uint64_t now_ms) const {
  return Decide(stored_key, stored_value, now_ms) == Verdict::kDrop;
}

bool TombstoneGc::ShouldDropNow(std::string_view stored_key, std::string_view stored_value) const {
  const uint64_t now_ms = clock_ms_ ? clock_ms_() : common::HlcClock::WallClockMs();
  switch (Decide(stored_key, stored_value, now_ms)) {
    case Verdict::kKeep:
      return false;
    case Verdict::kKeepProtected:
      kept_protected_.fetch_add(1, std::memory_order_relaxed);
      return false;
    case Verdict::kKeepUnrepaired:
      kept_unrepaired_.fetch_add(1, std::memory_order_relaxed);
      return false;
    case Verdict::kDrop:
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return true;
  }
  return false;
}

namespace {

class TombstoneFilter final : public rocksdb::CompactionFilter {
 public:
  explicit TombstoneFilter(std::shared_ptr<const TombstoneGc> gc) : gc_(std::move(gc)) {}

  // Only plain values are considered; there are no merge operands in the data CF.
  bool Filter(int /*level*/, const rocksdb::Slice& key, const rocksdb::Slice& existing_value,
              std::string* /*new_value*/, bool* /*value_changed*/) const override {
    return gc_->ShouldDropNow(std::string_view(key.data(), key.size()),
                              std::string_view(existing_value.data(), existing_value.size()));
  }

  const char* Name() const override { return "shardkv.TombstoneFilter"; }

 private:
  const std::shared_ptr<const TombstoneGc> gc_;
};

class TombstoneFilterFactory final : public rocksdb::CompactionFilterFactory {
 public:
  explicit TombstoneFilterFactory(std::shared_ptr<const TombstoneGc> gc) : gc_(std::move(gc)) {}

  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& /*context*/) override {
    return std::make_unique<TombstoneFilter>(gc_);
  }

  const char* Name() const override { return "shardkv.TombstoneFilterFactory"; }

 private:
  const std::shared_ptr<const TombstoneGc> gc_;
};

}  // namespace

std::shared_ptr<rocksdb::CompactionFilterFactory> NewTombstoneFilterFactory(
    std::shared_ptr<const TombstoneGc> gc) {
  return std::make_shared<TombstoneFilterFactory>(std::move(gc));
}

}  // namespace shardkv::storage
