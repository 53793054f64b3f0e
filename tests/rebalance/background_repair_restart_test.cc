// Background anti-entropy across restarts (design.md "Anti-entropy", RepairScheduler): a node
// restarted in the middle of a pass resumes that pass where it was, rather than beginning again
// at its first range, so a node restarted more often than its period still compares its later
// ranges.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "rebalance/plan.h"
#include "rebalance/repair_scheduler.h"
#include "rebalance_test_util.h"
#include "shardkv/stats.h"
#include "storage/storage.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using rebalance::RepairPassPosition;
using rebalance_test::Contents;
using rebalance_test::ReadAll;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;

namespace {

// Node `id`'s counters (empty if it did not answer).
std::map<std::string, int64_t> Counters(Client& client, const InProcessCluster& c, uint32_t id) {
  auto stats = client.NodeStats(c.Address(id));
  return stats.ok() ? stats->counters : std::map<std::string, int64_t>{};
}

int64_t Get(const std::map<std::string, int64_t>& counters, std::string_view name) {
  auto it = counters.find(std::string(name));
  return it == counters.end() ? -1 : it->second;
}

// The key of `contents` whose token is in `range` (the first one), or none.
std::optional<std::pair<uint64_t, std::string>> KeyIn(const Contents& contents,
                                                      const TokenRange& range) {
  for (const auto& [k, env] : contents) {
    if (range.Contains(k.first) && !env.tombstone) return k;
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("background repair position: encodes and decodes, refuses what it did not write",
          "[repair]") {
  RepairPassPosition p{1765000000123, 0x8000000000000000, false, false, 1764999999000};
  CHECK(p.Encode() == "1765000000123 9223372036854775808 0 1764999999000");
  auto back = RepairPassPosition::Decode(p.Encode());
  REQUIRE(back.ok());
  CHECK(*back == p);
  RepairPassPosition done{42, 0, true, true, 40};
  CHECK(done.Encode() == "42 done 1 40");
  back = RepairPassPosition::Decode(done.Encode());
  REQUIRE(back.ok());
  CHECK(*back == done);
  for (const char* bad : {"", "1 2 1", "1 2 1 4 5", "1 2 2 4", "1 -2 1 4", "x 2 1 4",
                          "1 2 1 99999999999999999999", "1  2 1 4", "1 2 1 4 "}) {
    INFO(bad);
    CHECK(RepairPassPosition::Decode(bad).status().IsInvalidArgument());
  }
}

TEST_CASE("background repair: a node restarted mid-pass resumes its pass, not its first range",
          "[repair]") {
  // 3 nodes, RF 3, 16 jump shards: node 1 drives (is the first replica of) about 5 of them.
  InProcessCluster c(3, ClusterParams{PlacementMode::kJump, 160, 16, 3, 2, 2});
  constexpr uint64_t kPeriodMs = 6000;
  // Only node 1 runs background repair, so only its passes repair what it drives.
  c.TuneNodes([](uint32_t id, NodeOptions* o) {
    o->repair_period_ms = kPeriodMs;
    o->background_repair = id == 1;
  });
  REQUIRE(c.Start().ok());
  std::vector<TokenRange> driven;
  for (const rebalance::MovingRange& r : rebalance::AllRanges(c.map())) {
    if (r.old_set.front() == 1) driven.push_back(r.range);
  }
  const size_t n = driven.size();
  REQUIRE(n >= 4);
  {
    auto client = c.Connect();
    REQUIRE(client.ok());
    for (int i = 0; i < 300; ++i) {
      REQUIRE((*client)->Put("key-" + std::to_string(i), "value", Consistency::kAll).ok());
    }
  }
  auto client = testing::MustConnect(c);
  // Node 1's first pass (range i due at (i + 1/2) * period / n) compares its first two ranges.
  REQUIRE(
      Eventually([&] { return Get(Counters(*client, c, 1), stats::repair_ranges_compared) >= 2; },
                 std::chrono::milliseconds(kPeriodMs)));
  c.StopNode(1);
  // Damage node 1 in its first driven range and in its last: a key removed from each.
  const Contents before = ReadAll(c, 1);
  const auto first_key = KeyIn(before, driven.front());
  const auto last_key = KeyIn(before, driven.back());
  REQUIRE(first_key);
  REQUIRE(last_key);
  {
    auto s = storage::Storage::Open(c.DataDir(1) + "/db", storage::StorageOptions{});
    REQUIRE(s.ok());
    REQUIRE((*s)->DebugWriteRawForTest(first_key->first, first_key->second, nullptr).ok());
    REQUIRE((*s)->DebugWriteRawForTest(last_key->first, last_key->second, nullptr).ok());
    REQUIRE((*s)->Close().ok());
  }
  REQUIRE(c.RestartNode(1).ok());
  client = testing::MustConnect(c);
  // The resumed pass runs on to its end: it repairs the last range's key, but it does not
  // begin again at the first range, whose key waits for the next pass. A fresh pass would
  // compare all n ranges, the first range's key included, before it completes.
  std::map<std::string, int64_t> at_end;
  int64_t most_in_before_end = 0;
  REQUIRE(Eventually(
      [&] {
        at_end = Counters(*client, c, 1);
        if (Get(at_end, stats::repair_passes) >= 1) return true;
        most_in_before_end = std::max(most_in_before_end, Get(at_end, stats::repair_keys_in));
        return false;
      },
      std::chrono::milliseconds(2 * kPeriodMs)));
  CHECK(Get(at_end, stats::repair_ranges_compared) >= 1);
  CHECK(Get(at_end, stats::repair_ranges_compared) < static_cast<int64_t>(n));
  CHECK(Get(at_end, stats::repair_keys_in) == 1);
  CHECK(most_in_before_end <= 1);
  // The next pass starts one period after the first one started and mends the first range.
  REQUIRE(Eventually([&] { return Get(Counters(*client, c, 1), stats::repair_keys_in) >= 2; },
                     std::chrono::milliseconds(2 * kPeriodMs)));
  CHECK(Get(Counters(*client, c, 1), stats::repair_keys_in) == 2);
  client.reset();
  rebalance_test::CheckEveryNodeHolds(c, before);
}
