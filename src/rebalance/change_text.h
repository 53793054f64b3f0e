// Small helpers the change frontend and driver share: how a change is named in logs and errors,
// and the wall-clock milliseconds its record keeps (started_ms, finished_ms).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "shardkv/change.h"

namespace shardkv::rebalance {

// "change 17 (add node 4, streaming)", "change 18 (params R=3 W=2 Q=2, streaming)".
inline std::string Describe(const ChangeRecord& r) {
  const std::string what =
      r.kind == ChangeKind::kParams
          ? "params R=" + std::to_string(r.params_replicas) +
                " W=" + std::to_string(r.params_write_quorum) +
                " Q=" + std::to_string(r.params_read_quorum)
          : std::string(ChangeKindName(r.kind)) + " node " + std::to_string(r.node_id);
  return "change " + std::to_string(r.change_id) + " (" + what + ", " +
         std::string(ChangeStateName(r.state)) + ")";
}

inline uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace shardkv::rebalance
