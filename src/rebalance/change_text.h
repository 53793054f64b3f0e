// Small helpers the change frontend and driver share: how a change is named in logs and errors,
// and the wall-clock milliseconds its record keeps (started_ms, finished_ms).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "shardkv/change.h"

namespace shardkv::rebalance {

// "change 17 (add node 4, streaming)".
inline std::string Describe(const ChangeRecord& r) {
  return "change " + std::to_string(r.change_id) + " (" + std::string(ChangeKindName(r.kind)) +
         " node " + std::to_string(r.node_id) + ", " + std::string(ChangeStateName(r.state)) + ")";
}

inline uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace shardkv::rebalance
