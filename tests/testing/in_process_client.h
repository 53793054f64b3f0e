// What the in-process cluster tests share: the RF 3, W 2, Q 2 parameters on a small shard map,
// a polling wait, and a client that must connect. Catch2 assertions, so tests only.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shardkv/client.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

namespace shardkv::testing {

// RF 3, W 2, Q 2 (ClusterParams' defaults) with 64 shards: jump mode's rebalancing grows with
// the shards, so the tests keep the map small.
inline ClusterParams ThreeReplicas(PlacementMode mode = PlacementMode::kRing) {
  ClusterParams p;
  p.mode = mode;
  p.shards = 64;
  return p;
}

// Polls `cond` until it holds or `timeout` passes (bounded; the condition is re-checked, never
// slept on as synchronisation).
inline bool Eventually(const std::function<bool()>& cond,
                       std::chrono::milliseconds timeout = std::chrono::seconds(15)) {
  return PollUntil(cond, timeout, std::chrono::milliseconds(20));
}

// A client of `c`, seeded with every node, or with node `only` alone when it is not 0.
inline std::unique_ptr<Client> MustConnect(const InProcessCluster& c, uint32_t timeout_ms = 5000,
                                           uint32_t only = 0) {
  ClientOptions o;
  o.timeout_ms = timeout_ms;
  if (only != 0) o.seeds = {c.Address(only)};
  auto client = c.Connect(o);
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  return std::move(client).value();
}

// Writes `part` for a test's setup (not what the test checks): the writes of a batch that
// missed its quorum are sent again, at most 3 sends in all. A replica batch has a 1 s deadline
// inside the node that a sanitizer build's slowdown can outlast (testing/time_scale.h cannot
// stretch it); a release build practically never resends.
inline void MultiPutResending(Client& client,
                              std::vector<std::pair<std::string, std::string>> part) {
  for (int send = 1; !part.empty(); ++send) {
    std::vector<std::pair<std::string, std::string>> failed;
    const auto results = client.MultiPut(part);
    for (size_t j = 0; j < results.size(); ++j) {
      if (results[j].ok()) continue;
      INFO("send " << send << ": " << results[j].status().ToString());
      REQUIRE(send < 3);
      failed.push_back(std::move(part[j]));
    }
    part = std::move(failed);
  }
}

}  // namespace shardkv::testing
