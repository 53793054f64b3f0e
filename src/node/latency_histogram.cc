#include "node/latency_histogram.h"

#include <bit>

namespace shardkv::node {

int LatencyHistogram::BucketOf(uint64_t micros) {
  if (micros < (1u << kSubBits)) return static_cast<int>(micros);
  const int top = 63 - std::countl_zero(micros);  // >= kSubBits
  const int sub = static_cast<int>((micros >> (top - kSubBits)) & ((1 << kSubBits) - 1));
  return ((top - kSubBits + 1) << kSubBits) + sub;
}

uint64_t LatencyHistogram::UpperBound(int bucket) {
  if (bucket < (1 << kSubBits)) return static_cast<uint64_t>(bucket) + 1;
  const int top = (bucket >> kSubBits) + kSubBits - 1;
  const uint64_t sub = bucket & ((1 << kSubBits) - 1);
  if (top >= 63) return UINT64_MAX;
  return ((uint64_t{1} << kSubBits) + sub + 1) << (top - kSubBits);
}

void LatencyHistogram::Record(uint64_t micros) {
  counts_[BucketOf(micros)].fetch_add(1, std::memory_order_relaxed);
}

uint64_t LatencyHistogram::Count() const {
  uint64_t total = 0;
  for (const auto& c : counts_) total += c.load(std::memory_order_relaxed);
  return total;
}

uint64_t LatencyHistogram::Percentile(double p) const {
  const uint64_t total = Count();
  if (total == 0) return 0;
  const double target = p * static_cast<double>(total);
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += counts_[b].load(std::memory_order_relaxed);
    if (static_cast<double>(seen) >= target) return UpperBound(b);
  }
  return UpperBound(kBuckets - 1);
}

}  // namespace shardkv::node
