// What `cluster status` says about the map consensus (design.md "Consensus"): the voters beside
// the members, the leader, a voter change under way (or why none can be made), the last one given
// up, and nodes out of the consensus after a Raft store error. Read from each answering node's
// stats (counter consensus_is_leader; info consensus_voter_ids, consensus_pending_change,
// consensus_given_up, consensus_store_error); the leader's view wins, since it changes the voters.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "json_writer.h"
#include "shardkv/client.h"

namespace shardkv::cli {

// What one node reported.
struct ConsensusReport {
  bool reported = false;  // it reported its voters (a node without consensus does not)
  bool leader = false;
  std::vector<uint32_t> voters;
  std::string pending_change, given_up, store_error;
};

ConsensusReport ReadConsensusReport(const NodeStatsSnapshot& stats);

struct ConsensusView {
  bool known = false;   // some node reported its voters
  uint32_t leader = 0;  // 0: no answering node leads
  std::vector<uint32_t> voters;
  std::vector<uint32_t> members;
  // The voters the map calls for: its up to five lowest members in state up.
  std::vector<uint32_t> desired_voters;
  std::string pending_change, given_up;
  std::map<uint32_t, std::string> store_errors;  // node -> its Raft store error
  bool voters_as_desired() const { return known && voters == desired_voters; }
};

// `reports` by node id (answering nodes of this cluster); `members` the map's node ids, with
// `up_members` those in state up (the voters the map calls for are the five lowest of these).
ConsensusView SummarizeConsensus(const std::map<uint32_t, ConsensusReport>& reports,
                                 std::vector<uint32_t> members, std::vector<uint32_t> up_members);

// "consensus: node 2 leads; voters 2, 3, 4 (members 2, 3, 4)", then, each on its own line, the
// change under way, the last one given up and store errors; "" when nothing was reported.
std::string ConsensusLines(const ConsensusView& view);
// "consensus": {...} or null.
void PrintConsensusJson(JsonWriter& w, const ConsensusView& view);

}  // namespace shardkv::cli
