#include "storage/key_counter.h"

#include <algorithm>
#include <limits>

namespace shardkv::storage {

uint64_t KeyCounter::BucketEnd(uint64_t expires_at_ms, uint64_t g) {
  const uint64_t q = expires_at_ms / g + (expires_at_ms % g != 0 ? 1 : 0);
  if (q > std::numeric_limits<uint64_t>::max() / g) return std::numeric_limits<uint64_t>::max();
  return q * g;
}

void KeyCounter::Replace(const KeyShape* before, const KeyShape& after) {
  const bool before_expires = before != nullptr && before->value && before->expires_at_ms != 0;
  const bool after_expires = after.value && after.expires_at_ms != 0;
  if (!before_expires && !after_expires) {
    // The common case (no TTL on either side): one atomic add, or nothing.
    const int delta = (after.value ? 1 : 0) - (before != nullptr && before->value ? 1 : 0);
    if (delta != 0) values_.fetch_add(delta, std::memory_order_relaxed);
    return;
  }
  common::MutexLock lock(&mu_);
  if (before != nullptr && before->value) {
    values_.fetch_sub(1, std::memory_order_relaxed);
    if (before_expires) ApplyExpiry(before->expires_at_ms, -1);
  }
  if (after.value) {
    values_.fetch_add(1, std::memory_order_relaxed);
    if (after_expires) ApplyExpiry(after.expires_at_ms, +1);
  }
}

void KeyCounter::Apply(const KeyShape& shape, int sign) {
  if (!shape.value) return;
  if (shape.expires_at_ms == 0) {
    values_.fetch_add(sign, std::memory_order_relaxed);
    return;
  }
  common::MutexLock lock(&mu_);
  values_.fetch_add(sign, std::memory_order_relaxed);
  ApplyExpiry(shape.expires_at_ms, sign);
}

void KeyCounter::ApplyExpiry(uint64_t expires_at_ms, int sign) {
  const uint64_t end = BucketEnd(expires_at_ms, granularity_);
  if (end <= watermark_) {
    expired_ += sign;
    return;
  }
  auto [it, inserted] = buckets_.emplace(end, 0);
  it->second += sign;
  pending_ += sign;
  // A bucket can go negative while a scan that has not reached its records runs: keep it.
  if (it->second == 0) buckets_.erase(it);
  if (buckets_.size() > kMaxBuckets) {
    // Down to half the limit, so that the next few inserts do not coarsen again (sparse buckets
    // merge only once the granularity reaches their spacing).
    while (buckets_.size() > kMaxBuckets / 2) Coarsen();
  }
}

void KeyCounter::Advance(uint64_t now_ms) {
  const uint64_t mark = now_ms - now_ms % granularity_;
  if (mark <= watermark_) return;
  watermark_ = mark;
  while (!buckets_.empty() && buckets_.begin()->first <= watermark_) {
    expired_ += buckets_.begin()->second;
    pending_ -= buckets_.begin()->second;
    buckets_.erase(buckets_.begin());
  }
  // An empty index can go back to the fine granularity: every record counted as expired has a
  // fine bucket no later than its coarse one, so it stays on the expired side. (Not while a
  // coarsening has put the watermark ahead of the clock: its early expiries stay in the bound.)
  if (buckets_.empty() && watermark_ <= now_ms) granularity_ = kInitialGranularityMs;
}

void KeyCounter::Coarsen() {
  const uint64_t g = granularity_ * 2;
  // The watermark must stay a multiple of the granularity, so that a record's bucket is on the
  // same side of it whichever granularity it was added at: round it up (the bucket straddling
  // it expires up to one granularity early).
  watermark_ = BucketEnd(watermark_, g);
  std::map<uint64_t, int64_t> merged;
  for (const auto& [end, n] : buckets_) {
    const uint64_t coarse = BucketEnd(end, g);
    if (coarse <= watermark_) {
      expired_ += n;
      pending_ -= n;
    } else {
      merged[coarse] += n;
    }
  }
  buckets_ = std::move(merged);
  granularity_ = g;
}

LiveKeyCounts KeyCounter::Counts(uint64_t now_ms) {
  common::MutexLock lock(&mu_);
  Advance(now_ms);
  LiveKeyCounts out;
  out.keys = std::max<int64_t>(0, values_.load(std::memory_order_relaxed) - expired_);
  out.expiring = std::clamp<int64_t>(pending_, 0, out.keys);
  out.granularity_ms = granularity_;
  return out;
}

}  // namespace shardkv::storage
