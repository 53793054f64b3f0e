// Histogram: request latencies in Prometheus's shape (fixed buckets, a sum and a count), kept
// next to node::LatencyHistogram (its 512 log-linear buckets give stats its percentiles; 512
// `le` series per op would be far too many for a scrape).
//
// The bounds are Prometheus's usual latency buckets, 100 us to 10 s; Record() is one relaxed
// increment of a bucket and one of the sum, cheap enough for every request on the I/O threads.
// A snapshot read while requests run may see a bucket and the sum of slightly different
// moments; _count is derived from the buckets, so it always equals the +Inf bucket.
//
// Thread-safety: Record() and Snapshot() may run concurrently.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "metrics/exposition_writer.h"

namespace shardkv::metrics {

class Histogram {
 public:
  static constexpr std::array<uint64_t, 16> kBoundsMicros = {
      100,   250,    500,    1000,   2500,    5000,    10000,   25000,
      50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000};

  void Record(uint64_t micros);
  // Bounds and the sum in seconds (Prometheus's base unit).
  HistogramSnapshot Snapshot() const;
  uint64_t Count() const;

 private:
  std::array<std::atomic<uint64_t>, kBoundsMicros.size() + 1> counts_{};
  std::atomic<uint64_t> sum_micros_{0};
};

}  // namespace shardkv::metrics
