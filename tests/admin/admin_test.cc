// shardkv::Admin (include/shardkv/admin.h), call by call, against real in-process nodes
// (testing/in_process_cluster.h): forming, reading, planning, beginning and watching a change,
// the refusals, cancel and throttle, and what a foreign or unreachable node looks like.
// Hermetic: port 0, a temp directory per cluster, fixed cluster ids, waits polled with deadlines.
#include "shardkv/admin.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/change.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/stats.h"
#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::AdminFor;
using shardkv::testing::InProcessCluster;
using shardkv::testing::WaitChange;
using std::chrono::seconds;

namespace {

constexpr uint64_t kOtherCluster = 0xB0B;

// 3 nodes, RF 3, 64 vnodes each (small maps: the tests are about the calls, not placement).
ClusterParams SmallRing() {
  ClusterParams p;
  p.mode = PlacementMode::kRing;
  p.vnodes = 64;
  return p;
}

// `n` keys "k<i>" = "v<i>" of `value_bytes` (at least the "v<i>" itself).
void Load(const InProcessCluster& c, int n, size_t value_bytes = 0) {
  auto client = c.Connect();
  INFO(client.status().ToString());
  REQUIRE(client.ok());
  std::vector<std::pair<std::string, std::string>> part;
  for (int i = 0; i < n; ++i) {
    std::string v = "v" + std::to_string(i);
    if (v.size() < value_bytes) v.resize(value_bytes, 'x');
    part.emplace_back("k" + std::to_string(i), std::move(v));
    if (part.size() < 500 && i + 1 < n) continue;
    // Setup, not what the tests check (see MultiPutResending).
    testing::MultiPutResending(**client, std::move(part));
    part.clear();
  }
}

// A formed cluster of 3 holding `keys` keys (Load), node 4 started standalone to join it, and an
// Admin of every node.
struct ThreePlusOne {
  explicit ThreePlusOne(int keys, size_t value_bytes = 0) : c(3, SmallRing()) {
    REQUIRE(c.Start().ok());
    Load(c, keys, value_bytes);
    auto added = c.AddStandaloneNode();
    REQUIRE(added.ok());
    REQUIRE(*added == 4);
    admin = AdminFor(c);
  }
  InProcessCluster c;
  std::unique_ptr<Admin> admin;
};

ChangeRequest Add(const InProcessCluster& c, uint32_t id) {
  return ChangeRequest{ChangeKind::kAdd, id, c.Address(id), 1.0};
}
ChangeRequest Remove(uint32_t id) { return ChangeRequest{ChangeKind::kRemove, id, "", 1.0}; }

ChangeThrottle Unthrottled() { return ChangeThrottle{0, 2}; }
// 1 MB/s, one stream: a change of a few MB streams for seconds.
ChangeThrottle Slow() { return ChangeThrottle{1u << 20, 1}; }

// Requires `r` to be OK, printing its status.
void RequireOk(const AdminReply& r) {
  INFO("from " << r.address << ": " << r.status.ToString());
  REQUIRE(r.status.ok());
}

ChangeReport WaitFor(Admin& admin, ChangeState state) {
  auto r = WaitChange(admin, state, seconds(60));
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return *r;
}

}  // namespace

TEST_CASE("admin: Create refuses a seed that is no host:port and contacts nothing", "[admin]") {
  for (const char* bad : {"", "nonsense", "host:", ":7000", "h:0", "h:65536", "h:12x"}) {
    INFO("seed '" << bad << "'");
    AdminOptions o;
    o.seeds = {"127.0.0.1:7000", bad};
    auto admin = Admin::Create(o);
    REQUIRE_FALSE(admin.ok());
    CHECK(admin.status().code() == Status::Code::kInvalidArgument);
  }
  AdminOptions zero;
  zero.seeds = {"127.0.0.1:7000"};
  zero.timeout_ms = 0;
  CHECK(Admin::Create(zero).status().code() == Status::Code::kInvalidArgument);

  // Nothing listens there, and Create does not find out: it contacts nothing.
  AdminOptions o;
  o.seeds = {"127.0.0.1:1", "[::1]:2"};
  auto admin = Admin::Create(o);
  REQUIRE(admin.ok());
  CHECK((*admin)->cluster_id() == 0);
  CHECK((*admin)->seeds() == o.seeds);
  (*admin)->SetSeeds({"127.0.0.1:3"});
  CHECK((*admin)->seeds() == std::vector<std::string>{"127.0.0.1:3"});
}

TEST_CASE("admin: FormCluster forms unformed nodes into a cluster at epoch 1", "[admin]") {
  InProcessCluster c(0, SmallRing());
  for (int i = 0; i < 3; ++i) REQUIRE(c.AddStandaloneNode().ok());
  std::vector<ClusterNode> nodes;
  for (uint32_t id = 1; id <= 3; ++id) nodes.push_back({id, c.Address(id), 1.0, NodeState::kUp});
  for (uint32_t id = 1; id <= 3; ++id) {
    REQUIRE(testing::ClusterIdOf(c.Address(id)) == 0);  // unformed: no cluster id, no map
  }
  auto admin = AdminFor(c.Addresses());
  REQUIRE(admin->cluster_id() == 0);

  SECTION("a bad parameter set is refused before any node is asked") {
    ClusterParams bad = SmallRing();
    bad.write_quorum = 4;  // above RF 3
    auto formed = admin->FormCluster(nodes, bad);
    INFO(formed.status().ToString());
    CHECK(formed.status().code() == Status::Code::kInvalidArgument);
    bad = SmallRing();
    bad.replication_factor = 0;
    CHECK(admin->FormCluster(nodes, bad).status().code() == Status::Code::kInvalidArgument);
    CHECK(admin->FormCluster({}, SmallRing()).status().code() == Status::Code::kInvalidArgument);
    for (uint32_t id = 1; id <= 3; ++id) {
      CHECK(testing::ClusterIdOf(c.Address(id)) == 0);  // untouched: still unformed
    }
    CHECK(admin->cluster_id() == 0);
  }

  SECTION("every node adopts the map, and the cluster id comes back") {
    auto formed = admin->FormCluster(nodes, SmallRing());
    INFO(formed.status().ToString());
    REQUIRE(formed.ok());
    CHECK(formed->epoch() == 1);
    CHECK(formed->cluster_id() != 0);
    CHECK(formed->nodes().size() == 3);
    CHECK(formed->claimant() == 1);
    CHECK(admin->cluster_id() == formed->cluster_id());
    for (uint32_t id = 1; id <= 3; ++id) {
      auto m = testing::NodeMap(c.Address(id));
      REQUIRE(m.has_value());
      CHECK(m->cluster_id() == formed->cluster_id());
      CHECK(m->epoch() == 1);
      CHECK(m->nodes().size() == 3);
    }
    // And it serves: a client of the formed cluster writes and reads.
    auto client = c.Connect();
    REQUIRE(client.ok());
    REQUIRE((*client)->Put("formed", "yes").ok());
    CHECK(*(*client)->Get("formed") == "yes");
  }

  SECTION("with an id given, that id") {
    auto formed = admin->FormCluster(nodes, SmallRing(), kOtherCluster);
    REQUIRE(formed.ok());
    CHECK(formed->cluster_id() == kOtherCluster);
    CHECK(admin->cluster_id() == kOtherCluster);
    CHECK(testing::ClusterIdOf(c.Address(2)) == kOtherCluster);
  }
}

TEST_CASE("admin: NewestMap, Describe and NodeStats of a formed cluster", "[admin]") {
  InProcessCluster c(3, SmallRing());
  REQUIRE(c.Start().ok());
  auto admin = AdminFor(c);

  auto map = admin->NewestMap();
  INFO(map.status().ToString());
  REQUIRE(map.ok());
  CHECK(map->cluster_id() == c.cluster_id());
  CHECK(map->epoch() == 1);
  CHECK(map->nodes().size() == 3);

  auto d = admin->Describe();
  INFO(d.status().ToString());
  REQUIRE(d.ok());
  CHECK(d->map.epoch() == 1);
  const auto seeds = c.Addresses();
  CHECK(std::find(seeds.begin(), seeds.end(), d->map_from) != seeds.end());
  REQUIRE(d->members.size() == 3);
  for (uint32_t id = 1; id <= 3; ++id) {
    const auto& m = d->members[id - 1];
    INFO("member " << id);
    CHECK(m.node.id == id);  // ascending id
    CHECK(m.node.address == c.Address(id));
    CHECK_FALSE(m.foreign);
    CHECK(m.probe.address == c.Address(id));
    CHECK(m.probe.reachable);
    REQUIRE(m.probe.map.has_value());
    CHECK(m.probe.map->cluster_id() == c.cluster_id());
    REQUIRE(m.probe.stats.has_value());
    CHECK(m.probe.stats->counters.at(std::string(stats::node_id)) == id);
  }

  REQUIRE(c.Connect().value()->Put("k", "v").ok());
  auto node2 = admin->NodeStats(c.Address(2));
  INFO(node2.status().ToString());
  REQUIRE(node2.ok());
  CHECK(node2->address == c.Address(2));
  CHECK(node2->counters.at(std::string(stats::node_id)) == 2);
  CHECK(node2->counters.count(std::string(stats::client_errors)) == 1);
  CHECK(node2->gauges.count(std::string(stats::disk_full)) == 1);
  CHECK(admin->SumCounter(std::string(stats::client_errors)) == 0);

  // A member that is down: Describe still describes it, as not reachable.
  c.StopNode(3);
  auto down = admin->Describe();
  REQUIRE(down.ok());
  REQUIRE(down->members.size() == 3);
  CHECK_FALSE(down->members[2].probe.reachable);
  CHECK_FALSE(down->members[2].probe.error.ok());
  CHECK(down->members[0].probe.reachable);
  CHECK_FALSE(admin->NodeStats(c.Address(3)).ok());
}

TEST_CASE("admin: Plan of an add counts the change and commits nothing", "[admin]") {
  const int kKeys = 1000;
  ThreePlusOne t(kKeys);
  const InProcessCluster& c = t.c;
  Admin* admin = t.admin.get();

  const AdminReply plan = admin->Plan(Add(c, 4));
  RequireOk(plan);
  CHECK_FALSE(plan.unreachable);
  CHECK_FALSE(plan.foreign);
  CHECK(plan.address != c.Address(4));  // never the joining node
  const ChangeRecord& r = plan.report.record;
  CHECK(r.state == ChangeState::kPlanned);
  CHECK(r.kind == ChangeKind::kAdd);
  CHECK(r.node_id == 4);
  CHECK(r.live_keys == kKeys);
  CHECK(r.total_copies == 3u * kKeys);
  CHECK(r.planned_copies > 0);
  CHECK(r.planned_copies < r.total_copies);
  CHECK(r.ideal_fraction > 0);
  CHECK(r.replicas_after == 3);
  CHECK(plan.report.shares.size() == 4);

  auto after = admin->NewestMap();
  REQUIRE(after.ok());
  CHECK(after->epoch() == 1);  // nothing committed
  CHECK_FALSE(after->has_pending());
  CHECK(after->nodes().size() == 3);
  const AdminReply status = admin->ChangeStatus();
  RequireOk(status);
  CHECK_FALSE(status.report.has_change);  // the cluster never had a change
}

TEST_CASE("admin: Begin an add, ChangeStatus to done, then plan and begin a remove", "[admin]") {
  const int kKeys = 1000;
  ThreePlusOne t(kKeys);
  const InProcessCluster& c = t.c;
  Admin* admin = t.admin.get();

  const AdminReply begun = admin->Begin(Add(c, 4), Unthrottled());
  RequireOk(begun);
  CHECK(begun.report.has_change);
  CHECK(begun.report.record.kind == ChangeKind::kAdd);
  CHECK(begun.report.record.node_id == 4);
  CHECK(begun.report.record.state == ChangeState::kStreaming);
  CHECK(begun.report.epoch == 2);
  const ChangeReport done = WaitFor(*admin, ChangeState::kDone);
  CHECK(done.record.moved_copies == done.record.planned_copies);
  CHECK(done.record.client_errors == 0);
  CHECK(ChangeEnded(done));

  auto map = admin->NewestMap();
  REQUIRE(map.ok());
  CHECK(map->nodes().size() == 4);
  CHECK_FALSE(map->has_pending());
  // A key written before the change is readable after it, through node 4 too.
  ClientOptions via4;
  via4.seeds = {c.Address(4)};
  auto client = c.Connect(via4);
  REQUIRE(client.ok());
  for (int i = 0; i < kKeys; i += 97) {
    auto v = (*client)->Get("k" + std::to_string(i));
    INFO("k" << i << ": " << v.status().ToString());
    REQUIRE(v.ok());
    CHECK(*v == "v" + std::to_string(i));
  }

  // Now remove node 1: never asked itself (it cannot drive its own removal).
  admin->SetSeeds(c.Addresses());
  const AdminReply plan = admin->Plan(Remove(1));
  RequireOk(plan);
  CHECK(plan.address != c.Address(1));
  CHECK(plan.report.record.kind == ChangeKind::kRemove);
  CHECK(plan.report.record.node_id == 1);
  CHECK(plan.report.record.live_keys == kKeys);
  CHECK(plan.report.record.planned_copies > 0);
  const AdminReply removing = admin->Begin(Remove(1), Unthrottled(), plan.address);
  RequireOk(removing);
  CHECK(removing.address == plan.address);
  CHECK(removing.report.record.kind == ChangeKind::kRemove);
  const ChangeReport removed = WaitFor(*admin, ChangeState::kDone);
  CHECK(removed.record.node_id == 1);
  auto final_map = admin->NewestMap();
  REQUIRE(final_map.ok());
  CHECK(final_map->nodes().size() == 3);
  CHECK(final_map->FindNode(1) == nullptr);
  CHECK(*(*client)->Get("k0") == "v0");
}

TEST_CASE("admin: Begin while a change runs is refused, SetThrottle and Cancel", "[admin]") {
  ThreePlusOne t(6000, 1000);  // ~4 MB to node 4 at 1 MB/s and one stream: seconds of streaming
  InProcessCluster& c = t.c;
  Admin* admin = t.admin.get();
  REQUIRE(c.AddStandaloneNode().ok());  // node 5, for a second change

  // Nothing runs yet: throttle, cancel and resume have nothing to act on.
  CHECK(admin->SetThrottle(0, std::nullopt).status.code() == Status::Code::kFailedPrecondition);
  CHECK(admin->Cancel().status.code() == Status::Code::kFailedPrecondition);
  CHECK(admin->SetThrottle(std::nullopt, std::nullopt).status.code() ==
        Status::Code::kInvalidArgument);

  const AdminReply begun = admin->Begin(Add(c, 4), Slow());
  RequireOk(begun);
  CHECK(begun.report.record.rate_bytes_per_s == 1u << 20);
  CHECK(begun.report.record.streams_per_node == 1);

  const AdminReply second = admin->Begin(Add(c, 5), Unthrottled());
  INFO(second.status.ToString());
  CHECK(second.status.code() == Status::Code::kFailedPrecondition);
  CHECK_FALSE(second.unreachable);
  CHECK(second.status.message().find("only one change at a time") != std::string::npos);
  CHECK(admin->Plan(Remove(2)).status.code() == Status::Code::kFailedPrecondition);
  // Resume is only for a failed change.
  CHECK(admin->Resume().status.code() == Status::Code::kFailedPrecondition);

  // Throttled lower still (one stream stays one), then cancelled while streaming.
  const AdminReply throttled = admin->SetThrottle(1u << 20, 1);
  RequireOk(throttled);
  CHECK(throttled.report.record.rate_bytes_per_s == 1u << 20);
  CHECK(throttled.report.record.streams_per_node == 1);
  const AdminReply streams_only = admin->SetThrottle(std::nullopt, 2);
  RequireOk(streams_only);
  CHECK(streams_only.report.record.rate_bytes_per_s == 1u << 20);  // kept
  CHECK(streams_only.report.record.streams_per_node == 2);
  const AdminReply now = admin->ChangeStatus();
  RequireOk(now);
  REQUIRE(now.report.record.state == ChangeState::kStreaming);
  // The driver's view (the leader's), whichever node relayed it.
  CHECK(now.report.from_driver);
  CHECK_FALSE(now.report.driver_address.empty());

  const AdminReply cancelled = admin->Cancel();
  RequireOk(cancelled);
  const ChangeReport end = WaitFor(*admin, ChangeState::kCancelled);
  CHECK(end.record.node_id == 4);
  auto map = admin->NewestMap();
  REQUIRE(map.ok());
  CHECK_FALSE(map->has_pending());
  CHECK(map->nodes().size() == 3);
  CHECK(map->FindNode(4) == nullptr);
  // Cancelled is an end: a second cancel is refused, and a new change may begin.
  CHECK(admin->Cancel().status.code() == Status::Code::kFailedPrecondition);
  RequireOk(admin->Begin(Add(c, 5), Unthrottled()));
  WaitFor(*admin, ChangeState::kDone);
}

TEST_CASE("admin: a node of another cluster answers as foreign", "[admin]") {
  InProcessCluster a(3, SmallRing());
  REQUIRE(a.Start().ok());
  InProcessCluster b(1, SmallRing(), 0, kOtherCluster);
  REQUIRE(b.Start().ok());

  // Expecting A, asking only B's node (it took a stopped A node's port, say).
  auto admin = AdminFor({b.Address(1)}, a.cluster_id());
  const AdminReply status = admin->ChangeStatus();
  INFO(status.status.ToString());
  CHECK_FALSE(status.status.ok());
  CHECK(status.foreign);
  CHECK_FALSE(status.unreachable);  // B's node answered: nothing was out of reach
  CHECK(status.status.code() == Status::Code::kUnavailable);
  CHECK(status.status.message().find("belongs to cluster " + std::to_string(kOtherCluster)) !=
        std::string::npos);
  // Asked directly, the refusal itself comes back, marked foreign.
  const AdminReply direct =
      admin->Begin(ChangeRequest{ChangeKind::kRemove, 3, "", 1.0}, ChangeThrottle{}, b.Address(1));
  INFO(direct.status.ToString());
  CHECK(direct.foreign);
  CHECK_FALSE(direct.unreachable);
  CHECK(direct.status.code() == Status::Code::kFailedPrecondition);
  CHECK(direct.status.message().find("not to cluster " + std::to_string(a.cluster_id())) !=
        std::string::npos);
  CHECK(admin->NewestMap().status().code() == Status::Code::kUnavailable);
  CHECK_FALSE(admin->NodeStats(b.Address(1)).ok());
  CHECK(admin->cluster_id() == a.cluster_id());  // never adopts B's

  // MapOf asks without a cluster id too: one request, B's map.
  auto theirs = admin->MapOf(b.Address(1));
  REQUIRE(theirs.ok());
  CHECK(theirs->cluster_id() == kOtherCluster);
  // Probe asks without a cluster id: B's node answers, with B's map.
  const NodeProbe probe = admin->Probe(b.Address(1));
  CHECK(probe.reachable);
  REQUIRE(probe.map.has_value());
  CHECK(probe.map->cluster_id() == kOtherCluster);

  // With A's nodes first, A's answers win and B's node is passed over.
  admin->SetSeeds({b.Address(1), a.Address(1)});
  auto map = admin->NewestMap();
  INFO(map.status().ToString());
  REQUIRE(map.ok());
  CHECK(map->cluster_id() == a.cluster_id());
  const AdminReply ours = admin->ChangeStatus();
  RequireOk(ours);
  CHECK(ours.address == a.Address(1));
}

TEST_CASE("admin: no seed answering is unreachable, Unavailable", "[admin]") {
  InProcessCluster gone(2, SmallRing());
  REQUIRE(gone.Start().ok());
  gone.StopNode(1);
  gone.StopNode(2);  // their ports are closed now

  AdminOptions o;
  o.seeds = gone.Addresses();
  o.cluster_id = gone.cluster_id();
  o.timeout_ms = 2000;
  auto admin = Admin::Create(o);
  REQUIRE(admin.ok());
  for (const AdminReply& r : {(*admin)->ChangeStatus(), (*admin)->Plan(Remove(2)),
                              (*admin)->Cancel(), (*admin)->SetThrottle(0, std::nullopt)}) {
    INFO(r.status.ToString());
    CHECK(r.unreachable);
    CHECK_FALSE(r.foreign);
    CHECK(r.status.code() == Status::Code::kUnavailable);
  }
  auto map = (*admin)->NewestMap();
  CHECK(map.status().code() == Status::Code::kUnavailable);
  CHECK(map.status().message().find(gone.Address(1)) != std::string::npos);
  const NodeProbe p = (*admin)->Probe(gone.Address(1));
  CHECK_FALSE(p.reachable);
  CHECK_FALSE(p.error.ok());
  CHECK_FALSE(p.map.has_value());
  CHECK((*admin)->SumCounter(std::string(stats::client_errors)) == 0);
}

TEST_CASE("admin: a join with node id 0 takes the id the standalone node reports", "[admin]") {
  ThreePlusOne t(500);
  const InProcessCluster& c = t.c;
  Admin* admin = t.admin.get();
  const ChangeRequest join{ChangeKind::kJoin, 0, c.Address(4), 1.0};

  const AdminReply plan = admin->Plan(join);
  RequireOk(plan);
  CHECK(plan.report.record.kind == ChangeKind::kAdd);
  CHECK(plan.report.record.node_id == 4);
  const AdminReply begun = admin->Begin(join, Unthrottled());
  RequireOk(begun);
  CHECK(begun.report.record.node_id == 4);
  WaitFor(*admin, ChangeState::kDone);
  auto map = admin->NewestMap();
  REQUIRE(map.ok());
  const ClusterNode* n4 = map->FindNode(4);
  REQUIRE(n4 != nullptr);
  CHECK(n4->address == c.Address(4));

  // A join of an address where nothing answers cannot learn an id: refused, nothing asked.
  InProcessCluster gone(1, SmallRing());
  REQUIRE(gone.Start().ok());
  gone.StopNode(1);
  const AdminReply nobody = admin->Plan(ChangeRequest{ChangeKind::kJoin, 0, gone.Address(1), 1.0});
  CHECK_FALSE(nobody.status.ok());
  CHECK(ChangeKindName(ChangeKind::kJoin) == "join");
  CHECK(ChangeKindName(ChangeKind::kAdd) == "add");
  CHECK(ChangeKindName(ChangeKind::kRemove) == "remove");
}
