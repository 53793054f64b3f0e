// The needs-repair tests' common start (design.md "Needs repair"): the fault bed's resurrected
// deletes (findings 2026-12-01, A4) in one process. Catch2 assertions, so tests only.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "shardkv/client.h"
#include "shardkv/stats.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

namespace shardkv::testing {

// Whether node `marker` publishes a needs-repair mark of node `target` (stats info repair_marks).
inline bool Marks(Client& client, const InProcessCluster& c, uint32_t marker, uint32_t target) {
  auto stats = client.NodeStats(c.Address(marker));
  if (!stats.ok()) return false;
  auto it = stats->info.find(std::string(stats::repair_marks));
  return it != stats->info.end() &&
         ("," + it->second).find("," + std::to_string(target) + ":") != std::string::npos;
}

// Counter `name` of node `id`, -1 if it did not answer or lacks it.
inline int64_t CounterOf(Client& client, const InProcessCluster& c, uint32_t id,
                         const std::string& name) {
  auto stats = client.NodeStats(c.Address(id));
  if (!stats.ok() || stats->counters.count(name) == 0) return -1;
  return stats->counters.at(name);
}

// Node `away` of `c` (every node holds every key: 3 nodes, RF 3) holds "old" for each of `keys`;
// then it stops, the keys are deleted (acknowledged by the other two), and it stays away until
// the hints for it have outlived the cluster's tombstone grace, which a node holding them notices
// (it publishes a mark of `away`). Node `away` is stopped on return.
inline void DeleteWhileAway(InProcessCluster& c, Client& client, uint32_t away,
                            const std::vector<std::string>& keys, uint64_t grace_ms) {
  for (const std::string& key : keys) REQUIRE(client.Put(key, "old").ok());
  for (const std::string& key : keys) {
    REQUIRE(Eventually([&] {
      auto local = c.LocalRead(away, key);
      return local.ok() && local->value == "old";
    }));
  }
  c.StopNode(away);
  for (const std::string& key : keys) {
    auto deleted = client.Delete(key);
    INFO(deleted.status().ToString());
    REQUIRE(deleted.ok());
  }
  const auto deleted_at = std::chrono::steady_clock::now();
  const auto grace = std::chrono::milliseconds(grace_ms);
  // Past the grace, each coordinator that holds hints for `away` marks it.
  const bool marked = Eventually(
      [&] {
        if (std::chrono::steady_clock::now() - deleted_at <= grace) return false;
        for (uint32_t id = 1; id <= c.size(); ++id) {
          if (id != away && c.running(id) && Marks(client, c, id, away)) return true;
        }
        return false;
      },
      grace + std::chrono::seconds(15));
  REQUIRE(marked);
}

}  // namespace shardkv::testing
