// NodeStats: what `shardkv stats` reports about one node.
//
// Counters are relaxed atomics bumped on the I/O threads; a snapshot is assembled on demand.
// `client_errors` counts the errors of client get/put/delete requests and their batches, except
// NotFound (an answer), STALE_EPOCH (the protocol's redirect) and Timeout (the client stopped
// waiting and counted it already): a client that follows map changes sees none, so the count
// should stay 0 through a migration.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "metrics/histogram.h"
#include "node/latency_histogram.h"
#include "shardkv/status.h"

namespace shardkv::node {

class NodeStats {
 public:
  static constexpr size_t kMaxOps = 32;
  // Status codes counted per op (the metrics' result label); kUnauthenticated is the last.
  static constexpr size_t kMaxCodes = 16;

  NodeStats() : start_(std::chrono::steady_clock::now()) {}

  // `op` is a variant index of net::RequestBody; names are given by the caller at snapshot.
  // `client_op`: a client data operation (get, put, delete, their batches, expire, scan), whose
  // failures count as client errors.
  void RecordRequest(size_t op, uint64_t micros, const Status& result, bool client_op);

  uint64_t client_errors() const { return client_errors_.load(std::memory_order_relaxed); }
  // Client data requests answered so far (background repair yields while they arrive).
  uint64_t client_requests() const { return client_requests_.load(std::memory_order_relaxed); }
  uint64_t OpCount(size_t op) const { return ops_[op].load(std::memory_order_relaxed); }
  uint64_t UptimeSeconds() const;
  const LatencyHistogram& latency() const { return latency_; }
  // For the metrics endpoint: requests of `op` that ended with `code`, and op's latencies.
  uint64_t ResultCount(size_t op, size_t code) const {
    return op < kMaxOps && code < kMaxCodes ? results_[op][code].load(std::memory_order_relaxed)
                                            : 0;
  }
  const metrics::Histogram* OpLatency(size_t op) const {
    return op < kMaxOps ? &op_latency_[op] : nullptr;
  }

 private:
  std::chrono::steady_clock::time_point start_;
  std::array<std::atomic<uint64_t>, kMaxOps> ops_{};
  std::atomic<uint64_t> client_errors_{0};
  std::atomic<uint64_t> client_requests_{0};
  LatencyHistogram latency_;
  std::array<std::array<std::atomic<uint64_t>, kMaxCodes>, kMaxOps> results_{};
  std::array<metrics::Histogram, kMaxOps> op_latency_{};
};

}  // namespace shardkv::node
