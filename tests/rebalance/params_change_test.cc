// Changing the replication factor and quorums of a live cluster (Admin::SetParams, `shardkv
// cluster set`): RF 1 -> 3 streams exactly the two new copies of every key, RF 3 -> 2 streams
// nothing and drops the surplus copies at cleanup; the history checker runs throughout (design.md
// "Changing the replication factor").
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "rebalance_test_util.h"
#include "shardkv/admin.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/history_checker.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using namespace shardkv::rebalance_test;
using shardkv::testing::AdminFor;
using shardkv::testing::Eventually;
using shardkv::testing::InProcessCluster;
using shardkv::testing::WaitChange;

namespace {

ChangeRequest ParamsOf(uint32_t replicas, uint32_t write_quorum, uint32_t read_quorum) {
  ChangeRequest c;
  c.kind = ChangeKind::kParams;
  c.replicas = replicas;
  c.write_quorum = write_quorum;
  c.read_quorum = read_quorum;
  return c;
}

// How many nodes hold key "k<i>" locally (a live version).
int Holders(const InProcessCluster& c, int i) {
  int n = 0;
  for (uint32_t id = 1; id <= c.size(); ++id) {
    auto v = c.LocalRead(id, "k" + std::to_string(i));
    if (v.ok() && v->found && !v->tombstone) ++n;
  }
  return n;
}

// Until every node installed a map without a pending change whose RF is `rf`.
bool AllOn(const InProcessCluster& c, uint32_t rf) {
  return Eventually(
      [&] {
        for (uint32_t id = 1; id <= c.size(); ++id) {
          auto m = MapOf(c, id);
          if (!m || m->has_pending() || m->params().replication_factor != rf) return false;
        }
        return true;
      },
      std::chrono::seconds(20));
}

}  // namespace

TEST_CASE("params change: RF 1 -> 3 streams the new copies, 3 -> 2 drops the surplus ones",
          "[rebalance][params][history]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    DYNAMIC_SECTION("mode " << PlacementModeName(mode)) {
      ClusterParams p = shardkv::testing::ThreeReplicas(mode);
      p.replication_factor = 1;
      p.write_quorum = 1;
      p.read_quorum = 1;
      InProcessCluster c(3, p);
      REQUIRE(c.Start().ok());
      const int kKeys = 2000;
      Load(c, kKeys);
      for (int i = 0; i < kKeys; i += 97) CHECK(Holders(c, i) == 1);
      auto admin = AdminFor(c);

      // Refused before anything is committed: a quorum above the factor, and no change at all.
      const AdminReply bad = admin->Plan(ParamsOf(2, 3, 0));
      CHECK(bad.status.code() == Status::Code::kInvalidArgument);
      CHECK_THAT(bad.status.message(), Catch::Contains("--write-quorum"));
      CHECK(admin->Plan(ParamsOf(1, 0, 0)).status.code() == Status::Code::kInvalidArgument);

      const AdminReply plan = admin->Plan(ParamsOf(3, 2, 2));
      INFO(plan.status.ToString());
      REQUIRE(plan.status.ok());
      CHECK(plan.report.record.kind == ChangeKind::kParams);
      CHECK(plan.report.record.live_keys == kKeys);
      // Exactly the two new copies of every key, nothing else.
      CHECK(plan.report.record.planned_copies == 2u * kKeys);
      CHECK(plan.report.record.replicas_before == 1);
      CHECK(plan.report.record.replicas_after == 3);
      CHECK(plan.report.record.write_quorum_after == 2);

      ClientOptions co;
      co.seeds = c.Addresses();
      shardkv::testing::HistoryOptions ho;
      ho.keys = 50;
      ho.duration = std::chrono::milliseconds(90000);
      shardkv::testing::HistoryChecker checker(co, ho);
      REQUIRE(checker.Start().ok());
      REQUIRE(
          checker.WaitUntil([](const auto& s) { return s.acked > 100; }, std::chrono::seconds(20)));

      const AdminReply up = admin->SetParams(3, 2, 2, RateMb(0));
      INFO(up.status.ToString());
      REQUIRE(up.status.ok());
      auto grown = WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
      INFO(grown.status().ToString());
      REQUIRE(grown.ok());
      CHECK(grown->record.kind == ChangeKind::kParams);
      // Checker writes during the change may be streamed as well (they are joint writes).
      CHECK(grown->record.moved_copies >= 2u * kKeys);
      CHECK(grown->record.moved_copies <= 2u * kKeys + 2 * 50 + 100);
      REQUIRE(AllOn(c, 3));
      auto m3 = MapOf(c, 2);
      REQUIRE(m3.has_value());
      CHECK(m3->EffectiveWriteQuorum() == 2);
      CHECK(m3->EffectiveReadQuorum() == 2);
      for (int i = 0; i < kKeys; i += 13) CHECK(Holders(c, i) == 3);
      REQUIRE(
          checker.WaitUntil([](const auto& s) { return s.acked > 300; }, std::chrono::seconds(20)));

      // 3 -> 2: nothing to stream; the third copy of each key is dropped at cleanup.
      const AdminReply plan_down = admin->Plan(ParamsOf(2, 0, 1));
      INFO(plan_down.status.ToString());
      REQUIRE(plan_down.status.ok());
      CHECK(plan_down.report.record.planned_copies == 0);
      CHECK(plan_down.report.record.params_write_quorum == 2);  // 0 kept it
      const AdminReply down = admin->SetParams(2, 0, 1, RateMb(0));
      INFO(down.status.ToString());
      REQUIRE(down.status.ok());
      auto shrunk = WaitChange(*admin, ChangeState::kDone, std::chrono::seconds(60));
      INFO(shrunk.status().ToString());
      REQUIRE(shrunk.ok());
      REQUIRE(AllOn(c, 2));
      bool dropped = Eventually(
          [&] {
            for (int i = 0; i < kKeys; i += 13) {
              if (Holders(c, i) != 2) return false;
            }
            return true;
          },
          std::chrono::seconds(20));
      for (int i = 0; i < kKeys && !dropped; i += 13) CHECK(Holders(c, i) == 2);
      CHECK(dropped);

      checker.Stop();
      Status final_check = checker.FinalCheck(co);
      INFO(final_check.ToString());
      CHECK(final_check.ok());
      const auto stats = checker.stats();
      INFO(stats.last_error);
      CHECK(stats.failed == 0);
      CHECK(stats.read_errors == 0);
      auto client = c.Connect();
      REQUIRE(client.ok());
      for (int i = 0; i < kKeys; i += 7) {
        auto v = (*client)->Get("k" + std::to_string(i));
        REQUIRE(v.ok());
        CHECK(*v == LoadedValue(i));
      }
      CHECK(admin->SumCounter(std::string(stats::client_errors)) == 0);
    }
  }
}
