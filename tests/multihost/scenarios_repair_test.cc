// Multi-host scenario for the needs-repair serving rules (design.md "Needs repair"), ending with
// `shardkv repair` bringing the node back without a rebuild: the fault
// bed's run g2 (findings 2026-12-01, A4), in which a node partitioned for longer than a shortened
// tombstone grace, and restarted before the heal, brought 17 of 40 deleted keys back through
// reads and a join's streams. This compressed form (3 nodes, a 5 s grace) has not reproduced the
// resurrection on a build without the serving rules either (0 back there too, in 3-node and
// 5-node runs), so it guards the outcome, not the mechanism; tests/cluster/repair_test.cc does
// that deterministically. In such a run node 3 did stream 8 of its old copies to node 4, but the
// tombstones on nodes 1 and 2 outlived the change's cleanup compaction, so every read merged
// them (why they were not collected is not known yet: g2 saw them go).
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "multihost/scenario_macros.h"

namespace shardkv::multihost {
namespace {

using namespace std::chrono_literals;

constexpr int kKeys = 40;

std::string Key(int i) { return "G.k" + std::to_string(i); }

struct Reads {
  int back = 0;        // a deleted key read with a value
  int unreadable = 0;  // neither a value nor "not found"
};

// Reads every deleted key through the CLI from the root namespace (seeds: `hosts`).
Reads ReadDeleted(Scenario& s, const std::vector<int>& hosts, const std::string& consistency) {
  Reads r;
  for (int i = 0; i < kKeys; ++i) {
    Command get =
        s.bed().Cli(0, s.bed().Addresses(hosts), {"--consistency", consistency, "get", Key(i)});
    if (get.exit_code == 0) {
      ++r.back;
      std::printf("resurrected (%s): %s = %s\n", consistency.c_str(), Key(i).c_str(),
                  get.out.c_str());
    } else if (get.exit_code != 1) {
      ++r.unreadable;
      std::printf("unreadable (%s): %s: exit %d: %s\n", consistency.c_str(), Key(i).c_str(),
                  get.exit_code, get.out.c_str());
    }
  }
  std::printf("%s reads of %d deleted keys: %d back, %d unreadable\n", consistency.c_str(), kKeys,
              r.back, r.unreadable);
  return r;
}

// Polls `cluster status --json` until node `id`'s row says it is in `state` ("needs-repair").
bool StatusShowsState(Scenario& s, int id, const std::string& state,
                      std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const std::string row = "{\"id\":" + std::to_string(id) + ",";
  while (std::chrono::steady_clock::now() < deadline) {
    Command status = s.bed().Cli(0, s.bed().Addresses({1, 2}), {"cluster", "status", "--json"});
    const size_t at = status.out.find(row);
    if (at != std::string::npos) {
      const std::string node = status.out.substr(at, status.out.find('}', at) - at);
      if (node.find("\"state\":\"" + state + "\"") != std::string::npos) {
        std::printf("status of node %d: %s}\n", id, node.c_str());
        return true;
      }
    }
    std::this_thread::sleep_for(250ms);  // a poll interval, not synchronisation
  }
  return false;
}

// Polls `shardkv stats` of each of `hosts` until it reports no pending hint.
bool HintsDrained(Scenario& s, const std::vector<int>& hosts, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int host : hosts) {
    for (;;) {
      Command stats = s.bed().Cli(0, s.bed().Addresses({host}), {"stats", "--json"});
      if (stats.out.find("\"hints_pending\":0") != std::string::npos) break;
      if (std::chrono::steady_clock::now() > deadline) {
        std::printf("node %d still has hints pending: %s\n", host, stats.out.c_str());
        return false;
      }
      std::this_thread::sleep_for(250ms);  // a poll interval, not synchronisation
    }
  }
  return true;
}

TEST_CASE("a partition longer than the tombstone grace and a restart of the partitioned node",
          "[multihost]") {
  // A 5 s grace, so that the hints for node 3 expire within the partition's window.
  MULTIHOST_SCENARIO(s, "grace-partition-restart", 4, {"--tombstone-grace", "5"});
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  REQUIRE(s.bed().StartNode(4).ok());
  for (const char* v : {"v1", "v2"}) {
    for (int i = 0; i < kKeys; ++i) {
      Command put = s.bed().Cli(0, s.bed().Addresses({1, 2, 3}), {"put", Key(i), v});
      INFO(put.out);
      REQUIRE(put.exit_code == 0);
    }
  }
  REQUIRE(s.nemesis().Isolate(3).ok());
  for (int i = 0; i < kKeys; ++i) {
    Command del = s.bed().Cli(0, s.bed().Addresses({1, 2}), {"del", Key(i)});
    INFO(del.out);
    REQUIRE(del.exit_code == 0);  // acknowledged by two replicas; hinted for node 3
  }
  // The fault's window: past the grace (so the hints for node 3 expire) while node 3 is away,
  // and a restart of node 3 before the heal (it drops what its peers had in flight to it).
  std::this_thread::sleep_for(Scale(8s));
  REQUIRE(s.nemesis().Restart(3).ok());
  std::this_thread::sleep_for(2s);
  REQUIRE(s.nemesis().Heal().ok());

  CHECK(StatusShowsState(s, 3, "needs-repair", 30s));
  // No read before the join: a quorum read would merge the tombstones the others still hold and
  // repair node 3 with them, hiding what the join does. Once the others have dropped their
  // expired hints for node 3, only the GC rule keeps their tombstones (no range was repaired with
  // node 3 since the deletes: design.md "The GC rule"); before that rule nothing did.
  CHECK(HintsDrained(s, {1, 2}, 30s));

  // A join: node 3 is no stream source, and the change's cleanup compaction on the old replicas
  // ran past the grace (before the GC rule it purged the tombstones: what made the keys come
  // back in g2).
  Command join = s.Cli(0, {1, 2}, {"cluster", "join", s.bed().Address(4)});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  auto state = s.FinishChange(Scale(60s), 1);
  INFO(state.status().ToString());
  REQUIRE(state.ok());
  CHECK(*state == "done");
  REQUIRE(s.Settle(30s).ok());
  const Reads quorum = ReadDeleted(s, {1, 2, 3, 4}, "quorum");
  CHECK(quorum.back == 0);
  CHECK(quorum.unreadable == 0);
  const Reads one = ReadDeleted(s, {1, 2, 4}, "one");
  CHECK(one.back == 0);
  std::printf("grace-partition-restart: %d deleted keys back at quorum, %d at one\n", quorum.back,
              one.back);
  // `shardkv repair` brings node 3 back without a rebuild (design.md "Needs repair"): under the
  // GC rule nodes 1 and 2 still hold the tombstones it lacks, so it compares every range it
  // holds and serves again (its background repair may have done so already), and no deleted
  // key comes back.
  Command repair = s.bed().Cli(0, s.bed().Addresses({1, 2}), {"repair", "--json"});
  INFO(repair.out);
  CHECK(repair.exit_code == 0);
  CHECK(repair.out.find("\"still_need_repair\":[]") != std::string::npos);
  CHECK(StatusShowsState(s, 3, "up", 10s));
  const Reads after = ReadDeleted(s, {1, 2, 3, 4}, "quorum");
  CHECK(after.back == 0);
  CHECK(after.unreadable == 0);
  // At `one` a read may be answered by node 3 alone: it holds no deleted value either.
  const Reads any_one = ReadDeleted(s, {1, 2, 3, 4}, "one");
  CHECK(any_one.back == 0);
  CHECK(s.Teardown().empty());
}

}  // namespace
}  // namespace shardkv::multihost
