// Helpers shared by the in-process rebalancer tests: the change requests they send through
// shardkv::Admin, loading keys, and reading one node's map. Waiting for a change is
// testing::WaitChange (testing/cluster_util.h).
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/admin.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

namespace shardkv::rebalance_test {

using std::chrono::seconds;

// Adding node `id` of `c` (started with AddStandaloneNode).
inline ChangeRequest AddOf(const testing::InProcessCluster& c, uint32_t id, double weight = 1.0) {
  return ChangeRequest{ChangeKind::kAdd, id, c.Address(id), weight};
}
inline ChangeRequest RemoveOf(uint32_t id) {
  return ChangeRequest{ChangeKind::kRemove, id, "", 1.0};
}

// Streams at `mb` MB/s (0: unthrottled), two per node.
inline ChangeThrottle RateMb(uint64_t mb) { return ChangeThrottle{mb << 20, 2}; }

// The map node `id` holds now.
inline std::optional<ClusterMap> MapOf(const testing::InProcessCluster& c, uint32_t id) {
  return testing::NodeMap(c.Address(id), std::chrono::seconds(10));
}

// The value Load() writes for key "k<i>".
inline std::string LoadedValue(int i, size_t value_bytes = 8) {
  return std::string(value_bytes, static_cast<char>('a' + i % 26));
}

// n keys "k<i>" with values of `value_bytes` (LoadedValue).
inline void Load(const testing::InProcessCluster& c, int n, size_t value_bytes = 8) {
  auto client = c.Connect();
  REQUIRE(client.ok());
  std::vector<std::pair<std::string, std::string>> part;
  for (int i = 0; i < n; ++i) {
    part.emplace_back("k" + std::to_string(i), LoadedValue(i, value_bytes));
    if (part.size() == 500 || i + 1 == n) {
      for (const auto& s : (*client)->MultiPut(part)) REQUIRE(s.ok());
      part.clear();
    }
  }
}

}  // namespace shardkv::rebalance_test
