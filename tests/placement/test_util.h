// Helpers shared by the placement tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv::testing {

// Nodes "prefix00".."prefixNN" of weight 1.
inline std::vector<NodeSpec> Nodes(int n, const std::string& prefix = "cache-") {
  std::vector<NodeSpec> out;
  for (int i = 0; i < n; ++i) {
    std::string idx = std::to_string(i);
    if (idx.size() < 2) idx = "0" + idx;
    out.push_back({prefix + idx, 1.0});
  }
  return out;
}

// The seeds' keys: "user:0" .. "user:<n-1>".
inline std::vector<std::string> Keys(int n) {
  std::vector<std::string> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back("user:" + std::to_string(i));
  return out;
}

// Owner name of every key.
inline std::vector<std::string> OwnerNames(const Placement& p,
                                           const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(p.nodes()[p.OwnerOfKey(k)].name);
  return out;
}

// Share of keys per node, in percent.
inline std::vector<double> SharesPct(const Placement& p, const std::vector<std::string>& keys) {
  std::vector<double> counts(p.node_count(), 0);
  for (const auto& k : keys) counts[p.OwnerOfKey(k)] += 1;
  for (double& c : counts) c = c * 100.0 / keys.size();
  return counts;
}

// splitmix64: a fixed-seed token generator for tests.
struct SplitMix {
  uint64_t state;
  uint64_t Next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

}  // namespace shardkv::testing
