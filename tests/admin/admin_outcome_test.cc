// shardkv::Admin against real in-process nodes: per-call options (seeds and timeouts for one
// call, the Admin's own left as they were) and ResolveOutcome finding a command's effect in the
// change status after an error reply.
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "shardkv/admin.h"
#include "shardkv/change_effect.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;
using shardkv::testing::WaitChange;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

ClusterParams OutcomeSmallRing() {
  ClusterParams p;
  p.mode = PlacementMode::kRing;
  p.vnodes = 64;
  return p;
}

void OutcomeLoad(const InProcessCluster& c, int n, size_t value_bytes) {
  auto client = c.Connect();
  REQUIRE(client.ok());
  std::vector<std::pair<std::string, std::string>> part;
  for (int i = 0; i < n; ++i) {
    part.emplace_back("k" + std::to_string(i), std::string(value_bytes, 'x'));
    if (part.size() == 500 || i + 1 == n) {
      for (const auto& s : (*client)->MultiPut(part)) REQUIRE(s.ok());
      part.clear();
    }
  }
}

// An Admin with no seeds of its own: every call below names its nodes.
std::unique_ptr<Admin> SeedlessAdmin(uint64_t cluster_id) {
  AdminOptions o;
  o.cluster_id = cluster_id;
  auto admin = Admin::Create(o);
  REQUIRE(admin.ok());
  return std::move(admin).value();
}

}  // namespace

TEST_CASE("admin: per-call seeds and timeouts leave the Admin's own as they were", "[admin]") {
  InProcessCluster c(3, OutcomeSmallRing());
  REQUIRE(c.Start().ok());
  auto admin = SeedlessAdmin(c.cluster_id());
  // Without seeds there is nobody to ask.
  CHECK(admin->NewestMap().status().code() == Status::Code::kUnavailable);

  AdminCallOptions call;
  call.seeds = c.Addresses();
  call.timeout_ms = 2000;
  auto map = admin->NewestMap(call);
  INFO(map.status().ToString());
  REQUIRE(map.ok());
  CHECK(map->nodes().size() == 3);
  CHECK(admin->seeds().empty());
  const AdminReply status = admin->ChangeStatus("", call);
  REQUIRE(status.status.ok());
  CHECK_FALSE(status.report.has_change);

  // One call to a node that does not answer gives up after its own timeout.
  AdminCallOptions dead;
  dead.seeds = {"127.0.0.1:1"};
  dead.timeout_ms = 300;
  const auto start = std::chrono::steady_clock::now();
  CHECK(admin->NewestMap(dead).status().code() == Status::Code::kUnavailable);
  CHECK(std::chrono::steady_clock::now() - start < seconds(5));
  // ...and the next call without options still has no seeds.
  CHECK(admin->NewestMap().status().code() == Status::Code::kUnavailable);
}

TEST_CASE("admin: ResolveOutcome finds a begin and a cancel that answered with an error",
          "[admin]") {
  InProcessCluster c(3, OutcomeSmallRing());
  REQUIRE(c.Start().ok());
  OutcomeLoad(c, 6000, 1000);  // ~4 MB to node 4 at 1 MB/s: seconds of streaming
  auto added = c.AddStandaloneNode();
  REQUIRE(added.ok());
  auto admin = SeedlessAdmin(c.cluster_id());
  AdminCallOptions call;
  call.seeds = {c.Address(1), c.Address(2), c.Address(3)};

  const AdminReply before = admin->ChangeStatus("", call);
  REQUIRE(before.status.ok());
  const AdminReply begun = admin->Begin(ChangeRequest{ChangeKind::kAdd, 4, c.Address(4), 1.0},
                                        ChangeThrottle{1u << 20, 1}, "", call);
  INFO(begun.status.ToString());
  REQUIRE(begun.status.ok());

  // As if the reply had been lost: the status shows the change began.
  AdminReply lost;
  lost.status = Status::Timeout("no reply within 150000 ms");
  lost.address = begun.address;
  const ChangeOutcome began = admin->ResolveOutcome(
      lost, ChangeEffect::Begin(before.report, ChangeKind::kAdd, 4), seconds(5), call);
  CHECK(began.outcome == MutationOutcome::kApplied);
  CHECK(began.confirmed);
  REQUIRE(began.report.has_value());
  CHECK(began.report->record.change_id == begun.report.record.change_id);
  CHECK_FALSE(began.address.empty());

  // A cancel that timed out and did not take effect (it was never sent): unknown, after the wait.
  const AdminReply streaming = admin->ChangeStatus("", call);
  REQUIRE(streaming.status.ok());
  REQUIRE_FALSE(ChangeEnded(streaming.report));
  const ChangeOutcome unknown =
      admin->ResolveOutcome(lost, ChangeEffect::Cancel(streaming.report), milliseconds(600), call);
  CHECK(unknown.outcome == MutationOutcome::kIndeterminate);
  // Refused with no connection at all: not applied.
  AdminReply down;
  down.status = Status::Unavailable("connection refused");
  down.unreachable = true;
  CHECK(admin->ResolveOutcome(down, ChangeEffect::Cancel(streaming.report), milliseconds(300), call)
            .outcome == MutationOutcome::kNotApplied);

  // Cancelled for real, its reply then treated as lost: the status shows it.
  REQUIRE(admin->Cancel("", call).status.ok());
  const ChangeOutcome cancelled =
      admin->ResolveOutcome(lost, ChangeEffect::Cancel(streaming.report), seconds(10), call);
  CHECK(cancelled.outcome == MutationOutcome::kApplied);
  REQUIRE(cancelled.report.has_value());
  CHECK(cancelled.report->record.state == ChangeState::kCancelled);
}
