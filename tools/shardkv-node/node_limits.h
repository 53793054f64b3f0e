// The accepted ranges of shardkv-node's numeric flags, in one place: main.cc's checks and the
// table-driven limit test (tests/integration/hardening_limits_test.cc) both read them.
#pragma once

#include <cstdint>

namespace shardkv::node_limits {

inline constexpr uint32_t kMinNodeId = 1;
inline constexpr uint32_t kMaxNodeId = 1u << 30;
inline constexpr int kMinIoThreads = 1;
inline constexpr int kMaxIoThreads = 64;

}  // namespace shardkv::node_limits
