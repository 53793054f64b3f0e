// Helpers shared by the in-process rebalancer tests: the change requests they send through
// shardkv::Admin, loading keys, and reading one node's map. Waiting for a change is
// testing::WaitChange (testing/cluster_util.h).
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/admin.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
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

// n keys "k<i>" with values of `value_bytes` (LoadedValue), in batches of 500, each resent where
// it missed its quorum (testing::MultiPutResending: the load is setup, not what tests check).
inline void Load(const testing::InProcessCluster& c, int n, size_t value_bytes = 8) {
  auto client = c.Connect();
  REQUIRE(client.ok());
  std::vector<std::pair<std::string, std::string>> part;
  for (int i = 0; i < n; ++i) {
    part.emplace_back("k" + std::to_string(i), LoadedValue(i, value_bytes));
    if (part.size() < 500 && i + 1 < n) continue;
    testing::MultiPutResending(**client, std::move(part));
    part.clear();
  }
}

// Every data record of a stopped node, read from its database (anti-entropy tests compare the
// replicas' storage, never client reads: read repair would hide a repair that does nothing).
using Contents = std::map<std::pair<uint64_t, std::string>, storage::Envelope>;
inline Contents ReadAll(const testing::InProcessCluster& c, uint32_t id) {
  auto s = storage::Storage::Open(c.DataDir(id) + "/db", storage::StorageOptions{});
  REQUIRE(s.ok());
  Contents out;
  storage::ScanOptions options;
  for (;;) {
    auto batch = (*s)->Scan({0, UINT64_MAX}, options);
    REQUIRE(batch.ok());
    for (auto& e : batch->entries) out[{e.token, e.key}] = e.envelope;
    if (batch->done || batch->entries.empty()) break;
    options.cursor = batch->cursor;
  }
  REQUIRE((*s)->Close().ok());
  return out;
}

// Stops every node of `c`, then checks that each one's storage holds exactly `expected`: the same
// versions, deleted keys as tombstones (none came back), nothing more.
inline void CheckEveryNodeHolds(testing::InProcessCluster& c, const Contents& expected) {
  for (uint32_t id = 1; id <= c.size(); ++id) c.StopNode(id);
  for (uint32_t id = 1; id <= c.size(); ++id) {
    INFO("node " << id);
    const Contents after = ReadAll(c, id);
    CHECK(after.size() == expected.size());
    for (const auto& [k, env] : expected) {
      auto it = after.find(k);
      REQUIRE(it != after.end());
      CHECK(it->second == env);
    }
  }
}

}  // namespace shardkv::rebalance_test
