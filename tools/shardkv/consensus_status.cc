#include "consensus_status.h"

#include <algorithm>
#include <cstdlib>

#include "shardkv/stats.h"

namespace shardkv::cli {
namespace {

constexpr size_t kMaxVoters = 5;  // MapConsensusOptions::max_voters

std::vector<uint32_t> ParseIds(const std::string& text) {
  std::vector<uint32_t> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(at, comma - at);
    char* end = nullptr;
    const unsigned long id = std::strtoul(part.c_str(), &end, 10);
    if (!part.empty() && end != nullptr && *end == '\0' && id > 0 && id <= UINT32_MAX) {
      out.push_back(static_cast<uint32_t>(id));
    }
    at = comma + 1;
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string Join(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out.empty() ? "none" : out;
}

std::string Info(const NodeStatsSnapshot& stats, std::string_view name) {
  auto it = stats.info.find(std::string(name));
  return it == stats.info.end() ? std::string() : it->second;
}

void IdArray(JsonWriter& w, const char* key, const std::vector<uint32_t>& ids) {
  w.Key(key).BeginArray();
  for (uint32_t id : ids) w.Value(id);
  w.EndArray();
}

}  // namespace

ConsensusReport ReadConsensusReport(const NodeStatsSnapshot& stats) {
  ConsensusReport r;
  auto voters = stats.info.find(std::string(stats::consensus_voter_ids));
  r.reported = voters != stats.info.end();
  if (r.reported) r.voters = ParseIds(voters->second);
  auto leader = stats.counters.find(std::string(stats::consensus_is_leader));
  r.leader = leader != stats.counters.end() && leader->second == 1;
  r.pending_change = Info(stats, stats::consensus_pending_change);
  r.given_up = Info(stats, stats::consensus_given_up);
  r.store_error = Info(stats, stats::consensus_store_error);
  return r;
}

ConsensusView SummarizeConsensus(const std::map<uint32_t, ConsensusReport>& reports,
                                 std::vector<uint32_t> members, std::vector<uint32_t> up_members) {
  ConsensusView v;
  std::sort(members.begin(), members.end());
  std::sort(up_members.begin(), up_members.end());
  if (up_members.size() > kMaxVoters) up_members.resize(kMaxVoters);
  v.members = std::move(members);
  v.desired_voters = std::move(up_members);
  const ConsensusReport* best = nullptr;
  for (const auto& [id, r] : reports) {
    if (!r.store_error.empty()) v.store_errors[id] = r.store_error;
    if (!r.reported) continue;
    if (best == nullptr || (r.leader && !best->leader)) best = &r;
    if (r.leader) v.leader = id;
  }
  if (best == nullptr) return v;
  v.known = true;
  v.voters = best->voters;
  if (best->leader) {
    v.pending_change = best->pending_change;
    v.given_up = best->given_up;
  }
  if (v.voters != v.desired_voters && v.pending_change.empty()) {
    v.pending_change = "the voters are not yet the map's (" + Join(v.desired_voters) + ")";
  }
  return v;
}

std::string ConsensusLines(const ConsensusView& v) {
  if (!v.known && v.store_errors.empty()) return "";
  std::string out = "consensus: ";
  out += v.leader != 0 ? "node " + std::to_string(v.leader) + " leads" : "no answering node leads";
  if (v.known) out += "; voters " + Join(v.voters) + " (members " + Join(v.members) + ")";
  out += "\n";
  if (!v.pending_change.empty()) out += "  voter change: " + v.pending_change + "\n";
  if (!v.given_up.empty()) out += "  last voter change given up: " + v.given_up + "\n";
  for (const auto& [id, error] : v.store_errors) {
    out += "  node " + std::to_string(id) + ": " + error + "\n";
  }
  return out;
}

void PrintConsensusJson(JsonWriter& w, const ConsensusView& v) {
  w.Key("consensus");
  if (!v.known && v.store_errors.empty()) {
    w.Raw("null");
    return;
  }
  w.Begin();
  w.Key("leader");
  if (v.leader != 0) {
    w.Value(v.leader);
  } else {
    w.Raw("null");
  }
  IdArray(w, "voters", v.voters);
  IdArray(w, "members", v.members);
  IdArray(w, "desired_voters", v.desired_voters);
  w.Field("voters_as_desired", v.voters_as_desired());
  w.Field("pending_change", v.pending_change);
  w.Field("given_up", v.given_up);
  w.Key("store_errors").Begin();
  for (const auto& [id, error] : v.store_errors) w.Field(std::to_string(id), error);
  w.End();
  w.End();
}

}  // namespace shardkv::cli
