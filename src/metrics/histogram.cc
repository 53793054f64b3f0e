#include "metrics/histogram.h"

#include <algorithm>

namespace shardkv::metrics {

void Histogram::Record(uint64_t micros) {
  // Prometheus buckets are inclusive (le): a sample equal to a bound belongs to that bucket.
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(kBoundsMicros.begin(), kBoundsMicros.end(), micros) - kBoundsMicros.begin());
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(micros, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot out;
  out.upper_bounds.reserve(kBoundsMicros.size());
  for (uint64_t b : kBoundsMicros) out.upper_bounds.push_back(static_cast<double>(b) / 1e6);
  out.counts.reserve(counts_.size());
  for (const auto& c : counts_) out.counts.push_back(c.load(std::memory_order_relaxed));
  out.sum = static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6;
  return out;
}

uint64_t Histogram::Count() const {
  uint64_t total = 0;
  for (const auto& c : counts_) total += c.load(std::memory_order_relaxed);
  return total;
}

}  // namespace shardkv::metrics
