// LatencyHistogram: lock-free recording of request latencies for p50/p99/p999 in stats.
//
// Buckets are log-linear (8 sub-buckets per power of two of microseconds), so any percentile is
// reported within 12.5% of the true value, with a fixed 512-slot table and one relaxed atomic
// increment per sample: cheap enough for every request on the I/O threads.
//
// Thread-safety: Record() and Percentile() may run concurrently.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace shardkv::node {

class LatencyHistogram {
 public:
  void Record(uint64_t micros);
  // The smallest bucket upper bound below which at least fraction p of samples fall (0 if none).
  uint64_t Percentile(double p) const;
  uint64_t Count() const;

 private:
  static constexpr int kSubBits = 3;
  static constexpr int kBuckets = 64 << kSubBits;
  static int BucketOf(uint64_t micros);
  static uint64_t UpperBound(int bucket);

  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
};

}  // namespace shardkv::node
