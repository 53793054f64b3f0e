// The deterministic workload behind `load` and `verify`: key i is "<prefix><i>" and its value is
// derived from (seed, key) alone, so verify can recompute what load wrote without storing it.
#pragma once

#include <cstdint>
#include <string>

namespace shardkv::cli {

std::string WorkloadKey(const std::string& prefix, uint64_t i);
// `size` printable bytes, a pure function of (seed, key).
std::string WorkloadValue(uint64_t seed, const std::string& key, size_t size);

}  // namespace shardkv::cli
