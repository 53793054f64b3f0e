// Anti-entropy under client load (issue 29, "repair under the history checker's load"): a
// replica damaged behind the cluster's back is repaired while the history checker's writers and
// readers run against every node. No client request may fail, the checker must find no lost
// acknowledged write, stale read or resurrected delete, and once the load has stopped one more
// repair leaves every replica's storage identical (compared on disk, never through client reads:
// read repair would hide a repair that does nothing).
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "rebalance_test_util.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "storage/storage.h"
#include "testing/cluster_util.h"
#include "testing/history_checker.h"
#include "testing/in_process_cluster.h"
#include "testing/time_scale.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

TEST_CASE("anti-entropy: repair under the history checker's load loses nothing",
          "[anti-entropy][history]") {
  InProcessCluster c(3, ClusterParams{});  // ring, RF 3, W = R = 2: every node holds every key
  REQUIRE(c.Start().ok());
  constexpr int kKeys = 400;
  {
    auto client = c.Connect();
    REQUIRE(client.ok());
    for (int i = 0; i < kKeys; ++i) {
      REQUIRE((*client)
                  ->Put("key-" + std::to_string(i), "v" + std::to_string(i), Consistency::kAll)
                  .ok());
    }
  }

  // Node 2 loses 50 keys and has 20 values replaced by older versions, through its storage while
  // it is stopped (a running node holds the database's lock).
  c.StopNode(2);
  int damaged = 0;
  {
    const rebalance_test::Contents held = rebalance_test::ReadAll(c, 2);
    REQUIRE(held.size() == kKeys);
    auto s = storage::Storage::Open(c.DataDir(2) + "/db", storage::StorageOptions{});
    REQUIRE(s.ok());
    int seen = 0;
    for (const auto& [k, env] : held) {
      ++seen;
      if (seen % 8 == 0) {  // removed
        REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, nullptr).ok());
        ++damaged;
      } else if (seen % 20 == 1) {  // an older version
        storage::Envelope old{env.timestamp - 1, env.node_id, false, "older"};
        REQUIRE((*s)->DebugWriteRawForTest(k.first, k.second, &old).ok());
        ++damaged;
      }
    }
    REQUIRE((*s)->Close().ok());
  }
  REQUIRE(damaged == 70);
  REQUIRE(c.RestartNode(2).ok());

  ClientOptions co;
  co.seeds = c.Addresses();
  testing::HistoryOptions ho;
  ho.keys = 100;
  ho.duration = testing::Scaled(std::chrono::milliseconds(60000));
  testing::HistoryChecker checker(co, ho);
  REQUIRE(checker.Start().ok());
  REQUIRE(checker.WaitUntil([](const auto& s) { return s.acked > 200; },
                            testing::Scaled(std::chrono::seconds(20))));

  // Two repairs while the load runs: the first streams the damage back, the second runs over
  // replicas that the workload keeps changing.
  auto admin = testing::AdminFor(c);
  auto first = admin->Repair({});
  REQUIRE(first.ok());
  INFO("first repair: " << first->ranges_compared << " ranges, " << first->ranges_failed
                        << " failed, " << first->keys_streamed << " keys streamed");
  CHECK(first->complete());
  CHECK(first->keys_streamed >= static_cast<uint64_t>(damaged));
  const uint64_t acked_then = checker.stats().acked;
  auto second = admin->Repair({});
  REQUIRE(second.ok());
  CHECK(second->complete());
  REQUIRE(checker.WaitUntil([&](const auto& s) { return s.acked > acked_then + 200; },
                            testing::Scaled(std::chrono::seconds(20))));
  checker.Stop();

  const testing::HistoryStats stats = checker.stats();
  INFO("acked " << stats.acked << ", failed " << stats.failed << ", reads " << stats.reads
                << ", read errors " << stats.read_errors << "; last error: " << stats.last_error);
  CHECK(stats.failed == 0);
  CHECK(stats.read_errors == 0);

  // With the load stopped, one more repair leaves the three replicas identical on disk, before
  // the checker's final reads (at `all`, with read repair) could make them so.
  auto last = admin->Repair({});
  REQUIRE(last.ok());
  CHECK(last->complete());
  admin.reset();
  for (uint32_t id = 1; id <= 3; ++id) c.StopNode(id);
  const rebalance_test::Contents node1 = rebalance_test::ReadAll(c, 1);
  CHECK(node1.size() > static_cast<size_t>(kKeys));
  for (uint32_t id = 2; id <= 3; ++id) {
    INFO("node " << id);
    CHECK(rebalance_test::ReadAll(c, id) == node1);
  }
  for (uint32_t id = 1; id <= 3; ++id) REQUIRE(c.RestartNode(id).ok());

  ClientOptions final_options;
  final_options.seeds = c.Addresses();
  const Status final_check = checker.FinalCheck(final_options);
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  WARN("repair under load: " << damaged << " damaged keys; first repair streamed "
                             << first->keys_streamed << ", second " << second->keys_streamed
                             << ", last " << last->keys_streamed << "; the workload acked "
                             << stats.acked << " writes and " << stats.reads << " reads");
}
