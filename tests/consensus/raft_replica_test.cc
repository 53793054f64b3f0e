// RaftReplica over libraft with shardkv's raft_io, in one process: replicas talk through a
// TestNetwork that can partition them, and keep their state in real Storage directories, so
// restarts reload it from disk.
#include "consensus/raft_replica.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <vector>

#include "consensus/raft_group.h"
#include "consensus/raft_test_network.h"

namespace shardkv::consensus {

using namespace std::chrono_literals;

TEST_CASE("raft: three replicas elect one leader and apply proposals in one order", "[consensus]") {
  Group g(3);
  const uint64_t leader = g.AwaitLeader();
  for (const std::string& c : Commands("c", 20)) g.Propose(c);
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 20); }));
  CHECK(g[1].machine->applied() == Commands("c", 20));
  // A follower refuses proposals, naming the leader.
  const uint64_t follower = leader == 1 ? 2 : 1;
  Status s = g[follower].replica->ProposeSync("x", 5s);
  if (g.Leader() == leader) {
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    CHECK(s.message().find("not the leader") != std::string::npos);
  }
  RaftStatus st = g[leader].replica->status();
  CHECK(st.configuration.size() == 3);
  CHECK(st.malformed_messages == 0);
}

TEST_CASE("raft: a leader cut off from the majority cannot commit", "[consensus]") {
  Group g(3);
  const uint64_t old_leader = g.AwaitLeader();
  g.Propose("before");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 1); }));
  g.net().Isolate(old_leader);
  // The isolated leader appends the proposal but can never commit it.
  Status lost = g[old_leader].replica->ProposeSync("lost", 3s);
  CHECK_FALSE(lost.ok());
  std::set<uint64_t> majority;
  for (uint64_t id : {1, 2, 3}) {
    if (id != old_leader) majority.insert(id);
  }
  const uint64_t new_leader = g.AwaitLeader(majority);
  CHECK(new_leader != old_leader);
  REQUIRE(g[new_leader].replica->ProposeSync("after", 10s).ok());
  g.net().HealAll();
  // The old leader steps down, drops its uncommitted entry and catches up.
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 2); }));
  CHECK(g[old_leader].machine->applied() == std::vector<std::string>{"before", "after"});
}

TEST_CASE("raft: a restarted replica reloads its log from storage and catches up", "[consensus]") {
  Group g(3);
  g.AwaitLeader();
  for (const std::string& c : Commands("a", 5)) g.Propose(c);
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 5); }));
  // Restart every server, one at a time, committing in between.
  for (uint64_t id : {1, 2, 3}) {
    g.Close(id);
    g.Propose("while-" + std::to_string(id) + "-down");
    g.Open(id, /*bootstrap=*/false);
  }
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 8); }));
  // A whole-group restart: the state comes back from disk alone.
  for (uint64_t id : {1, 2, 3}) g.Close(id);
  for (uint64_t id : {1, 2, 3}) g.Open(id, /*bootstrap=*/false);
  g.Propose("after-restart");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 9); }));
  // Bootstrapping a replica that has state is refused.
  g.Close(3);
  {
    storage::StorageOptions o;
    o.node_id = 3;
    auto st = storage::Storage::Open(g[3].path, o);
    REQUIRE(st.ok());
    Recorder machine;
    testing::TestNetwork::Endpoint* e = g.net().EndpointFor(3);
    RaftReplicaOptions ro;
    ro.id = 3;
    ro.address = "server-3";
    RaftReplica again(ro, st->get(), &machine, e);
    Status s = again.Bootstrap(g.founders());
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    again.Stop();
    REQUIRE((*st)->Close().ok());
  }
}

TEST_CASE("raft: a replica behind a compacted log catches up from a snapshot", "[consensus]") {
  Group g(3, /*snapshot_threshold=*/8, /*trailing=*/2);
  g.AwaitLeader();
  g.Propose("first");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 1); }));
  const uint64_t leader = g.AwaitLeader();
  const uint64_t behind = leader == 3 ? 2 : 3;
  g.Close(behind);
  const std::vector<std::string> more = Commands("m", 40);
  for (const std::string& c : more) g.Propose(c);
  g.Open(behind, /*bootstrap=*/false);
  std::vector<uint64_t> all = {1, 2, 3};
  REQUIRE(PollUntil([&] { return g.AllApplied(all, 41); }));
  CHECK(g[behind].machine->restores() >= 1);
  // And a restart of a server whose own log was compacted restores its own snapshot.
  g.Close(leader);
  g.Open(leader, /*bootstrap=*/false);
  g.Propose("last");
  REQUIRE(PollUntil([&] { return g.AllApplied(all, 42); }));
  CHECK(g[leader].machine->restores() >= 1);
}

TEST_CASE("raft: servers join as voters and leave", "[consensus]") {
  Group g(3);
  g.AwaitLeader();
  g.Propose("one");
  // A pristine fourth server: no bootstrap, it learns everything from the leader.
  g.Open(4, /*bootstrap=*/false);
  Status added;
  for (int attempt = 0; attempt < 10; ++attempt) {
    added = g[g.AwaitLeader()].replica->AddServerSync({4, "server-4", RaftRole::kVoter}, 20s);
    if (added.ok()) break;
  }
  REQUIRE(added.ok());
  g.Propose("two");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3, 4}, 2); }));
  auto voters = [&](uint64_t at) {
    int n = 0;
    for (const RaftServer& s : g[at].replica->status().configuration) {
      if (s.role == RaftRole::kVoter) ++n;
    }
    return n;
  };
  CHECK(voters(4) == 4);
  // Remove a follower; the group keeps committing with the rest.
  const uint64_t leader = g.AwaitLeader();
  const uint64_t gone = leader == 2 ? 3 : 2;
  REQUIRE(g[leader].replica->RemoveServerSync(gone, 20s).ok());
  g.Close(gone);
  g.Propose("three");
  std::vector<uint64_t> rest;
  for (uint64_t id : {1, 2, 3, 4}) {
    if (id != gone) rest.push_back(id);
  }
  REQUIRE(PollUntil([&] { return g.AllApplied(rest, 3); }));
  CHECK(voters(rest[0]) == 3);
}

TEST_CASE("raft: leadership moves on request", "[consensus]") {
  Group g(3);
  const uint64_t leader = g.AwaitLeader();
  g.Propose("x");
  const uint64_t target = leader == 1 ? 2 : 1;
  Status s;
  for (int attempt = 0; attempt < 5; ++attempt) {
    s = g[g.AwaitLeader()].replica->TransferLeadershipSync(target, 10s);
    if (s.ok() || g.Leader() == target) break;
  }
  REQUIRE(PollUntil([&] { return g.Leader() == target; }));
  g.Propose("y");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 2); }));
}

}  // namespace shardkv::consensus
