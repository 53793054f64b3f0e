#include "node/node_stats.h"

namespace shardkv::node {

void NodeStats::RecordRequest(size_t op, uint64_t micros, const Status& result, bool client_op) {
  if (op < kMaxOps) {
    ops_[op].fetch_add(1, std::memory_order_relaxed);
    const size_t code = static_cast<size_t>(result.code());
    if (code < kMaxCodes) results_[op][code].fetch_add(1, std::memory_order_relaxed);
    op_latency_[op].Record(micros);
  }
  latency_.Record(micros);
  if (client_op) client_requests_.fetch_add(1, std::memory_order_relaxed);
  // Client-visible errors of the data plane only (KvService says which ops those are);
  // node-to-node and admin refusals are not a client's failed request.
  // NotFound is an answer, not an error; STALE_EPOCH is the protocol's redirect.
  // A Timeout is a request dropped because it arrived after its client stopped waiting (the
  // client saw its own timeout and retried; counting it here would count one failure twice).
  if (client_op && !result.ok() && !result.IsNotFound() &&
      result.code() != Status::Code::kStaleEpoch && result.code() != Status::Code::kTimeout) {
    client_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

uint64_t NodeStats::UptimeSeconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_)
      .count();
}

}  // namespace shardkv::node
