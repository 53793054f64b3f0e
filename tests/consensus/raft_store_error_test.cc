// A Raft store that fails (a full disk, injected through RaftLogStore's StoreFault): the server
// leaves the group while its writes fail and takes part again once they succeed, without a
// restart of the process; and a membership change that cannot complete (a server that cannot
// catch up) gives way by its deadline, so the change after it completes.
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "consensus/raft_group.h"
#include "consensus/raft_replica.h"

namespace shardkv::consensus {
namespace {

using namespace std::chrono_literals;

int Voters(const RaftStatus& st) {
  int n = 0;
  for (const RaftServer& s : st.configuration) n += s.role == RaftRole::kVoter ? 1 : 0;
  return n;
}

RaftRole RoleOf(const RaftStatus& st, uint64_t id) {
  for (const RaftServer& s : st.configuration) {
    if (s.id == id) return s.role;
  }
  return RaftRole::kSpare;
}

// Retries a membership change on whoever leads until it succeeds (bounded); the last error.
Status ChangeOnLeader(Group& g, const std::function<Status(RaftReplica&)>& change) {
  Status last;
  for (int attempt = 0; attempt < 10; ++attempt) {
    last = change(*g[g.AwaitLeader()].replica);
    if (last.ok()) return last;
  }
  return last;
}

}  // namespace

TEST_CASE("raft: a server whose store refused writes takes part again once it takes them",
          "[consensus]") {
  Group g(3, 64, 32, [](RaftReplicaOptions* o) { o->recovery_interval = 200ms; });
  const uint64_t leader = g.AwaitLeader();
  for (const std::string& c : Commands("a", 5)) g.Propose(c);
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 5); }));

  // A follower's disk fills: the two others commit without it.
  const uint64_t sick = leader == 3 ? 2 : 3;
  g[sick].disk->Fill();
  for (const std::string& c : Commands("b", 5)) g.Propose(c);
  REQUIRE(g[sick].disk->refused() > 0);
  CHECK(PollUntil([&] { return g[sick].replica->status().recovering; }, 10s));
  const RaftStatus out = g[sick].replica->status();
  CHECK(out.disk_errors >= 1);
  CHECK(out.last_error.find("No space left on device") != std::string::npos);
  CHECK(out.state == RaftStatus::State::kUnavailable);
  // While out, it refuses requests rather than queueing them.
  CHECK(g[sick].replica->ProposeSync("x", 5s).code() == Status::Code::kUnavailable);

  // The disk has room again: without a restart, it takes part. With another server stopped,
  // nothing commits without it.
  g[sick].disk->Free();
  REQUIRE(PollUntil([&] { return !g[sick].replica->status().recovering; }, 10s));
  CHECK(g[sick].replica->status().recoveries >= 1);
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 10); }, 10s));
  uint64_t other = 0;
  for (uint64_t id : {1, 2, 3}) {
    if (id != sick && other == 0) other = id;
  }
  const uint64_t third = 6 - sick - other;
  g.Close(other);
  for (const std::string& c : Commands("c", 5)) g.Propose(c);
  REQUIRE(PollUntil([&] { return g.AllApplied({sick, third}, 15); }));
  std::vector<std::string> expected = Commands("a", 5);
  for (const char* tag : {"b", "c"}) {
    for (const std::string& c : Commands(tag, 5)) expected.push_back(c);
  }
  CHECK(g[sick].machine->applied() == expected);

  // What it stored while it took part again is a log without a gap or a misplaced entry: it
  // reloads it at a restart, and a leader elected with its vote commits on it.
  g.Close(sick);
  g.Open(sick, /*bootstrap=*/false);
  g.Open(other, /*bootstrap=*/false);
  g.Propose("d");
  expected.push_back("d");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, expected.size()); }));
  CHECK(g[sick].machine->applied() == expected);
}

TEST_CASE("raft: a leader whose store refuses writes gives way, and rejoins once it takes them",
          "[consensus]") {
  Group g(3, 64, 32, [](RaftReplicaOptions* o) { o->recovery_interval = 200ms; });
  const uint64_t leader = g.AwaitLeader();
  g.Propose("a");
  g[leader].disk->Fill();
  // The proposal cannot be stored on the leader: it leaves the group and the others elect one.
  (void)g[leader].replica->ProposeSync("lost-or-not", 3s);
  std::set<uint64_t> rest;
  for (uint64_t id : {1, 2, 3}) {
    if (id != leader) rest.insert(id);
  }
  const uint64_t next = g.AwaitLeader(rest);
  REQUIRE(g[next].replica->ProposeSync("b", 10s).ok());
  g[leader].disk->Free();
  REQUIRE(PollUntil([&] { return !g[leader].replica->status().recovering; }, 10s));
  g.Propose("c");
  // Every server applies the same commands in the same order (whether the proposal made while
  // the disk was full committed is up to the new leader's log).
  REQUIRE(PollUntil([&] {
    const size_t n = g[next].machine->applied().size();
    return n >= 3 && g.AllApplied({1, 2, 3}, n);
  }));
}

TEST_CASE("raft: a change that cannot complete gives way by its deadline, and the next completes",
          "[consensus]") {
  Group g(3, 64, 32, [](RaftReplicaOptions* o) {
    o->recovery_interval = 200ms;
    o->catch_up_timeout = 1000ms;
    o->change_deadline = 3000ms;
  });
  g.AwaitLeader();
  g.Propose("one");
  // A fourth server whose disk is full from the start: it can be added as a standby (the
  // voters decide that), but it can never catch up to become a voter.
  g.Open(4, /*bootstrap=*/false);
  g[4].disk->Fill();
  REQUIRE(ChangeOnLeader(g, [](RaftReplica& r) {
            return r.AddServerSync({4, "server-4", RaftRole::kStandby}, 20s);
          }).ok());
  const uint64_t leader = g.AwaitLeader();
  const auto t0 = std::chrono::steady_clock::now();
  const Status promoted = g[leader].replica->AssignRoleSync(4, RaftRole::kVoter, 30s);
  const auto took = std::chrono::steady_clock::now() - t0;
  INFO(promoted.ToString());
  CHECK(promoted.code() == Status::Code::kUnavailable);
  CHECK(promoted.message().find("gave up making server 4 a voter") != std::string::npos);
  CHECK(promoted.message().find("did not catch up") != std::string::npos);
  CHECK(took < 3000ms);  // by its deadline (libraft's own bound would be 5 s)

  // The next change goes ahead at once: a voter leaves.
  const uint64_t gone = leader == 3 ? 2 : 3;
  const auto t1 = std::chrono::steady_clock::now();
  const Status removed = g[leader].replica->RemoveServerSync(gone, 10s);
  INFO(removed.ToString());
  CHECK(removed.ok());
  CHECK(std::chrono::steady_clock::now() - t1 < 2000ms);
  g.Close(gone);
  RaftStatus st = g[leader].replica->status();
  CHECK(Voters(st) == 2);
  CHECK(RoleOf(st, 4) == RaftRole::kStandby);

  // Once its disk has room, server 4 catches up and becomes a voter after all.
  g[4].disk->Free();
  REQUIRE(PollUntil([&] { return !g[4].replica->status().recovering; }, 10s));
  REQUIRE(ChangeOnLeader(g, [](RaftReplica& r) {
            return r.AssignRoleSync(4, RaftRole::kVoter, 20s);
          }).ok());
  g.Propose("two");
  std::vector<uint64_t> members;
  for (uint64_t id : {1, 2, 3, 4}) {
    if (id != gone) members.push_back(id);
  }
  REQUIRE(PollUntil([&] { return g.AllApplied(members, 2); }));
  st = g[g.AwaitLeader()].replica->status();
  CHECK(Voters(st) == 3);
  CHECK(RoleOf(st, 4) == RaftRole::kVoter);
}

TEST_CASE("raft: a change still pending at its deadline is answered as given up", "[consensus]") {
  // A deadline shorter than the catch-up bound: the promotion is still under way in libraft.
  Group g(3, 64, 32, [](RaftReplicaOptions* o) {
    o->catch_up_timeout = 4000ms;
    o->change_deadline = 1000ms;
  });
  g.AwaitLeader();
  g.Propose("one");
  g.Open(4, /*bootstrap=*/false);
  g[4].disk->Fill();
  REQUIRE(ChangeOnLeader(g, [](RaftReplica& r) {
            return r.AddServerSync({4, "server-4", RaftRole::kStandby}, 20s);
          }).ok());
  const uint64_t leader = g.AwaitLeader();
  const Status promoted = g[leader].replica->AssignRoleSync(4, RaftRole::kVoter, 30s);
  INFO(promoted.ToString());
  CHECK(promoted.code() == Status::Code::kTimeout);
  CHECK(promoted.message().find("gave up making server 4 a voter after 1000 ms") !=
        std::string::npos);
  CHECK(promoted.message().find("server 4 has not caught up") != std::string::npos);
  CHECK(g[leader].replica->status().changes_given_up == 1);
  // libraft still holds it until its own bound: the next change is refused, not queued...
  const Status meanwhile = g[leader].replica->RemoveServerSync(leader == 3 ? 2 : 3, 5s);
  CHECK(meanwhile.code() == Status::Code::kFailedPrecondition);
  // ...and goes ahead once libraft gave the promotion up.
  CHECK(PollUntil([&] { return g[leader].replica->status().promotee_id == 0; }, 10s));
}

}  // namespace shardkv::consensus
