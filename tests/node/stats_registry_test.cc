// The stats registry (include/shardkv/stats.h) is the one list of a node's statistics: a node
// reports every registered name, and nothing that is not registered, so the CLI, the Admin API
// and a metrics endpoint that read the registry never miss or invent a name.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "shardkv/admin.h"
#include "shardkv/node.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"

using namespace shardkv;

TEST_CASE("stats registry: a node reports exactly the registered names", "[node][stats]") {
  shardkv::testing::TempDir dir;
  NodeOptions o;
  o.id = 1;
  o.data_dir = dir.path();
  o.redis_listen = "127.0.0.1:0";    // so that redis_address is reported too
  o.metrics_listen = "127.0.0.1:0";  // metrics_address is reported only with a metrics listener
  auto node = testing::MustStartFormed(o);
  auto admin = testing::AdminFor({node->address()});
  StatusOr<NodeStatsSnapshot> snapshot = admin->NodeStats(node->address());
  // The consensus reports its voters from its first tick (100 ms) on.
  testing::PollUntil(
      [&] {
        snapshot = admin->NodeStats(node->address());
        return snapshot.ok() && snapshot->info.count(std::string(stats::consensus_voter_ids)) == 1;
      },
      std::chrono::seconds(10));
  INFO(snapshot.status().ToString());
  REQUIRE(snapshot.ok());

  std::set<std::string> counters, gauges;
  for (const auto& s : stats::kCounters) counters.insert(std::string(s.name));
  for (const auto& s : stats::kGauges) gauges.insert(std::string(s.name));
  CHECK(counters.size() == stats::kCounters.size());  // no name registered twice
  for (const auto& name : counters) {
    INFO("registered counter " << name);
    CHECK(snapshot->counters.count(name) == 1);
  }
  for (const auto& name : gauges) {
    INFO("registered gauge " << name);
    CHECK(snapshot->gauges.count(name) == 1);
  }
  size_t ops = 0;
  for (const auto& [name, value] : snapshot->counters) {
    INFO("reported counter " << name);
    if (name.rfind(stats::kOpsPrefix, 0) == 0) {
      ++ops;
      continue;
    }
    CHECK(counters.count(name) == 1);
  }
  CHECK(ops > 0);
  for (const auto& [name, value] : snapshot->gauges) {
    INFO("reported gauge " << name);
    CHECK(gauges.count(name) == 1);
  }
  CHECK(snapshot->counters.at(std::string(stats::node_id)) == 1);
  std::set<std::string> info;
  for (const auto& s : stats::kInfo) info.insert(std::string(s.name));
  // Reported only when there is something to say (every info value is non-empty): the repair
  // ones while the node needs repair or holds needs-repair marks of others, which a fresh node
  // does not; storage_error while its storage fails; the consensus ones while a voter change is
  // under way or was given up, or its Raft store fails.
  CHECK(snapshot->info.count(std::string(stats::needs_repair_reason)) == 0);
  CHECK(snapshot->info.count(std::string(stats::repair_marks)) == 0);
  CHECK(snapshot->info.count(std::string(stats::storage_error)) == 0);
  CHECK(snapshot->info.count(std::string(stats::consensus_pending_change)) == 0);
  CHECK(snapshot->info.count(std::string(stats::consensus_given_up)) == 0);
  CHECK(snapshot->info.count(std::string(stats::consensus_store_error)) == 0);
  CHECK(snapshot->info.count(std::string(stats::gc_blocked_by)) == 0);
  CHECK(snapshot->info.size() == info.size() - 7);
  for (const auto& [name, value] : snapshot->info) {
    INFO("reported info " << name);
    CHECK(info.count(name) == 1);
    CHECK_FALSE(value.empty());
  }
  CHECK(snapshot->info.at(std::string(stats::address)) == node->address());
  CHECK(snapshot->info.at(std::string(stats::metrics_address)) ==
        "127.0.0.1:" + std::to_string(node->metrics_port()));
  CHECK(snapshot->info.at(std::string(stats::version)) == SHARDKV_VERSION);
  CHECK(snapshot->info.at(std::string(stats::consensus_voter_ids)) == "1");
}
