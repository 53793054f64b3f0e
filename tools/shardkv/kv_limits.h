// The accepted ranges of the key-value commands' numeric flags and inputs (put/get/del, load,
// verify, stats and the global flags), in one place: the flags, their checks and a table-driven
// test all read them from here, so they cannot drift apart. (The cluster commands keep theirs in
// cluster_limits.h. This file is not named limits.h: with tools/shardkv on an include path, as
// in the tests, that name would shadow the system <limits.h>.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace shardkv::cli::limits {

// The node's default limits (NodeOptions::max_key_bytes / max_value_bytes). The CLI refuses
// bigger keys and values before it reads or sends more: a bigger value could not be framed.
inline constexpr size_t kMaxKeyBytes = size_t{64} << 10;
inline constexpr size_t kMaxValueBytes = size_t{16} << 20;

// --timeout (ms), global.
inline constexpr uint32_t kMinTimeoutMs = 1;
inline constexpr uint32_t kMaxTimeoutMs = 3600u * 1000u;

// --cluster-id, global: 0 is not a cluster id (it means "not known").
inline constexpr uint64_t kMinClusterId = 1;

// load / verify.
inline constexpr uint64_t kMinCount = 1;
// At most a million keys per run, so that a run at the maximum ends within a minute on a 2-core
// machine (about 15 s each for load and verify against one node); load more with several runs
// under different --prefix values.
inline constexpr uint64_t kMaxCount = 1'000'000;
inline constexpr size_t kMaxValueSize = kMaxValueBytes;  // --value-size
inline constexpr int kMinConcurrency = 1;
inline constexpr int kMaxConcurrency = 4096;
// --concurrency x --value-size: the values in flight at once. Above this the CLI would need
// gigabytes of memory (4096 x 16 MiB = 64 GiB), so the pair is refused up front.
inline constexpr uint64_t kMaxBytesInFlight = uint64_t{1} << 30;
// A key is <prefix><index>: the index takes at most 20 digits.
inline constexpr size_t kMaxPrefixBytes = kMaxKeyBytes - 20;
// --max-errors: stop after this many failed requests; 0 = never stop.
inline constexpr uint64_t kDefaultMaxErrors = 1000;
inline constexpr uint64_t kMaxMaxErrors = kMaxCount;

}  // namespace shardkv::cli::limits
