#include "node/node_stats.h"

namespace shardkv {

void NodeStats::RecordRequest(size_t op, uint64_t micros, const Status& result) {
  if (op < kMaxOps) ops_[op].fetch_add(1, std::memory_order_relaxed);
  latency_.Record(micros);
  // NotFound is an answer, not an error; STALE_EPOCH is the protocol's redirect.
  if (!result.ok() && !result.IsNotFound() && result.code() != Status::Code::kStaleEpoch) {
    client_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t NodeStats::UptimeSeconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_)
      .count();
}

}  // namespace shardkv
