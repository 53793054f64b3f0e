// NextConfigurationStep (src/cluster/voter_reconciler.h): the voters follow the members one step
// at a time, and a step is taken only when the voters it leaves can decide it.
#include "cluster/voter_reconciler.h"

#include <catch2/catch.hpp>
#include <set>

namespace shardkv::cluster {
namespace {

using consensus::RaftRole;
using consensus::RaftServer;
using Kind = ConfigurationStep::Kind;

RaftServer V(uint64_t id) { return {id, "h:" + std::to_string(id), RaftRole::kVoter}; }
RaftServer S(uint64_t id) { return {id, "h:" + std::to_string(id), RaftRole::kStandby}; }

ConfigurationView View(uint64_t self, std::vector<RaftServer> have, std::vector<RaftServer> want,
                       std::set<uint64_t> silent = {}, std::set<uint64_t> backing_off = {}) {
  ConfigurationView v;
  v.self_id = self;
  v.have = std::move(have);
  v.want = std::move(want);
  v.heard = [silent](uint64_t id) { return silent.count(id) == 0; };
  v.backing_off = std::move(backing_off);
  return v;
}

}  // namespace

TEST_CASE("voters: nothing to do when the configuration is the desired one", "[consensus]") {
  const ConfigurationStep s =
      NextConfigurationStep(View(1, {V(1), V(2), S(3)}, {V(1), V(2), S(3)}));
  CHECK(s.kind == Kind::kNone);
  CHECK(s.waiting.empty());
}

TEST_CASE("voters: a departed voter is removed before a new one is promoted", "[consensus]") {
  // The findings' cluster: node 1 killed and removed from the map, node 4 a member.
  const auto s = NextConfigurationStep(View(2, {V(1), V(2), V(3), S(4)}, {V(2), V(3), V(4)}, {1}));
  CHECK(s.kind == Kind::kRemove);
  CHECK(s.server.id == 1);
  CHECK(s.what == "removing server 1");
  // Then node 4 gets its vote: 2 and 3 and 4 answer, a majority of {2, 3, 4}.
  const auto next = NextConfigurationStep(View(2, {V(2), V(3), S(4)}, {V(2), V(3), V(4)}));
  CHECK(next.kind == Kind::kAssign);
  CHECK(next.server.id == 4);
  CHECK(next.server.role == RaftRole::kVoter);
  CHECK(next.what == "making server 4 a voter");
}

TEST_CASE("voters: a new member is added as a standby first", "[consensus]") {
  const auto s = NextConfigurationStep(View(1, {V(1), V(2), V(3)}, {V(1), V(2), V(3), V(4)}));
  CHECK(s.kind == Kind::kAdd);
  CHECK(s.server.id == 4);
  CHECK(s.server.address == "h:4");
  CHECK(s.server.role == RaftRole::kStandby);
}

TEST_CASE("voters: a step the voters it leaves cannot decide waits, and says why", "[consensus]") {
  // Two of three voters down: removing one leaves {2, 3}, of which only 2 answers; promoting 4
  // makes {1, 2, 3, 4}, of which two answer.
  const auto s = NextConfigurationStep(
      View(2, {V(1), V(2), V(3), S(4)}, {V(2), V(3), V(4)}, /*silent=*/{1, 3}));
  CHECK(s.kind == Kind::kNone);
  CHECK(
      s.waiting.find("removing server 1: only 1 of the 2 voters of the new configuration answer") !=
      std::string::npos);
  CHECK(s.waiting.find("making server 4 a voter: only 2 of the 4 voters of the new") !=
        std::string::npos);
  // A server that does not answer is not made a voter, however many others answer.
  const auto silent4 =
      NextConfigurationStep(View(2, {V(2), V(3), S(4)}, {V(2), V(3), V(4)}, /*silent=*/{4}));
  CHECK(silent4.kind == Kind::kNone);
  CHECK(silent4.waiting == "making server 4 a voter: it does not answer");
}

TEST_CASE("voters: a server backing off after a change given up does not hold the others up",
          "[consensus]") {
  // Node 4's promotion was given up; node 5 joins meanwhile and is added.
  const auto s = NextConfigurationStep(
      View(1, {V(1), V(2), V(3), S(4)}, {V(1), V(2), V(3), V(4), V(5)}, {}, /*backoff=*/{4}));
  CHECK(s.kind == Kind::kAdd);
  CHECK(s.server.id == 5);
  const auto only4 = NextConfigurationStep(
      View(1, {V(1), V(2), V(3), S(4)}, {V(1), V(2), V(3), V(4)}, {}, /*backoff=*/{4}));
  CHECK(only4.kind == Kind::kNone);
  CHECK(only4.waiting == "making server 4 a voter: backing off after a change given up");
}

TEST_CASE("voters: a leader leaving or losing its vote hands leadership on", "[consensus]") {
  const auto leaving = NextConfigurationStep(View(1, {V(1), V(2), V(3)}, {V(2), V(3)}));
  CHECK(leaving.kind == Kind::kHandOn);
  const auto demoted = NextConfigurationStep(View(1, {V(1), V(2), V(3)}, {S(1), V(2), V(3)}));
  CHECK(demoted.kind == Kind::kHandOn);
  // Another voter losing its vote is demoted before anyone is promoted (at most five voters).
  const auto swap = NextConfigurationStep(
      View(1, {V(1), V(2), V(3), V(4), V(5), S(6)}, {V(1), S(2), V(3), V(4), V(5), V(6)}));
  CHECK(swap.kind == Kind::kAssign);
  CHECK(swap.server.id == 2);
  CHECK(swap.server.role == RaftRole::kStandby);
}

}  // namespace shardkv::cluster
