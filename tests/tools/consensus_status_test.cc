// What `cluster status` shows of the map consensus (tools/shardkv/consensus_status.h): the
// leader's voters beside the members, a voter change under way, the last one given up, and a node
// out of the consensus after a Raft store error.
#include "consensus_status.h"

#include <catch2/catch.hpp>

#include "shardkv/stats.h"

namespace shardkv::cli {
namespace {

NodeStatsSnapshot Stats(bool leader, const std::string& voters,
                        std::map<std::string, std::string> more = {}) {
  NodeStatsSnapshot s;
  s.counters[std::string(stats::consensus_is_leader)] = leader ? 1 : 0;
  if (!voters.empty()) s.info[std::string(stats::consensus_voter_ids)] = voters;
  for (auto& [k, v] : more) s.info[k] = v;
  return s;
}

}  // namespace

TEST_CASE("cluster status: the leader's voters beside the members", "[cli]") {
  std::map<uint32_t, ConsensusReport> reports;
  // A follower that still knows an older configuration, and the leader.
  reports[3] = ReadConsensusReport(Stats(false, "1,2,3"));
  reports[2] = ReadConsensusReport(
      Stats(true, "2,3",
            {{std::string(stats::consensus_pending_change),
              "making server 4 a voter (for 2 s; given up after 10 s)"},
             {std::string(stats::consensus_given_up),
              "making server 4 a voter (30 s ago): gave up making server 4 a voter: server 4 did "
              "not catch up with the log within 5000 ms; nothing changed"}}));
  reports[4] = ReadConsensusReport(
      Stats(false, "2,3",
            {{std::string(stats::consensus_store_error),
              "IO error: no space left on device on node 4; out of the consensus group until its "
              "store takes writes"}}));
  const ConsensusView v = SummarizeConsensus(reports, {4, 2, 3}, {2, 3, 4});
  CHECK(v.known);
  CHECK(v.leader == 2);
  CHECK(v.voters == std::vector<uint32_t>{2, 3});
  CHECK(v.members == std::vector<uint32_t>{2, 3, 4});
  CHECK_FALSE(v.voters_as_desired());
  const std::string text = ConsensusLines(v);
  CHECK(text.find("consensus: node 2 leads; voters 2, 3 (members 2, 3, 4)\n") == 0);
  CHECK(text.find("  voter change: making server 4 a voter (for 2 s; given up after 10 s)\n") !=
        std::string::npos);
  CHECK(text.find("  last voter change given up: making server 4 a voter (30 s ago)") !=
        std::string::npos);
  CHECK(text.find("  node 4: IO error: no space left on device on node 4; out of the consensus") !=
        std::string::npos);
  JsonWriter w;
  w.Begin();
  PrintConsensusJson(w, v);
  w.End();
  CHECK(w.str().find("\"consensus\":{\"leader\":2,\"voters\":[2,3],\"members\":[2,3,4],"
                     "\"desired_voters\":[2,3,4],\"voters_as_desired\":false,") == 1);
  CHECK(w.str().find("\"store_errors\":{\"4\":\"IO error: no space left") != std::string::npos);
}

TEST_CASE("cluster status: voters as the map calls for them, and no consensus reported", "[cli]") {
  std::map<uint32_t, ConsensusReport> reports;
  for (uint32_t id = 1; id <= 7; ++id)
    reports[id] = ReadConsensusReport(Stats(id == 1, "1,2,3,4,5"));
  const ConsensusView v = SummarizeConsensus(reports, {1, 2, 3, 4, 5, 6, 7}, {1, 2, 3, 4, 5, 6, 7});
  CHECK(v.voters_as_desired());  // at most five vote: the lowest up members
  CHECK(v.pending_change.empty());
  CHECK(ConsensusLines(v) ==
        "consensus: node 1 leads; voters 1, 2, 3, 4, 5 (members 1, 2, 3, 4, "
        "5, 6, 7)\n");
  // Without a leader among the answering nodes, the voters come from another node, and the
  // difference from the map is said.
  reports.clear();
  reports[3] = ReadConsensusReport(Stats(false, "1,2,3"));
  const ConsensusView w = SummarizeConsensus(reports, {2, 3}, {2, 3});
  CHECK(ConsensusLines(w) ==
        "consensus: no answering node leads; voters 1, 2, 3 (members 2, 3)\n"
        "  voter change: the voters are not yet the map's (2, 3)\n");
  // Nodes without consensus report no voters: nothing is shown.
  reports.clear();
  reports[1] = ReadConsensusReport(NodeStatsSnapshot{});
  CHECK(ConsensusLines(SummarizeConsensus(reports, {1}, {1})).empty());
}

}  // namespace shardkv::cli
