// NextConfigurationStep (voter_reconciler.h).
#include "cluster/voter_reconciler.h"

#include <algorithm>

namespace shardkv::cluster {
namespace {

using consensus::RaftRole;
using consensus::RaftServer;

const RaftServer* Find(const std::vector<RaftServer>& servers, uint64_t id) {
  auto it = std::find_if(servers.begin(), servers.end(),
                         [id](const RaftServer& s) { return s.id == id; });
  return it == servers.end() ? nullptr : &*it;
}

std::set<uint64_t> VotersOf(const std::vector<RaftServer>& servers) {
  std::set<uint64_t> out;
  for (const RaftServer& s : servers) {
    if (s.role == RaftRole::kVoter) out.insert(s.id);
  }
  return out;
}

// Whether a majority of `voters` was heard; if not, `why` says how many were.
bool Decidable(const std::set<uint64_t>& voters, const std::function<bool(uint64_t)>& heard,
               std::string* why) {
  size_t n = 0;
  for (uint64_t id : voters) n += heard(id) ? 1 : 0;
  if (n * 2 > voters.size()) return true;
  *why = "only " + std::to_string(n) + " of the " + std::to_string(voters.size()) +
         " voters of the new configuration answer";
  return false;
}

std::string Server(uint64_t id) { return "server " + std::to_string(id); }

ConfigurationStep Step(ConfigurationStep::Kind kind, RaftServer server, std::string what) {
  ConfigurationStep s;
  s.kind = kind;
  s.server = std::move(server);
  s.what = std::move(what);
  return s;
}

}  // namespace

std::string RaftRoleName(RaftRole role) {
  switch (role) {
    case RaftRole::kVoter:
      return "voter";
    case RaftRole::kStandby:
      return "standby";
    default:
      return "spare";
  }
}

ConfigurationStep NextConfigurationStep(const ConfigurationView& v) {
  using Kind = ConfigurationStep::Kind;
  const std::set<uint64_t> voters = VotersOf(v.have);
  std::vector<std::string> blocked;
  std::string why;
  // Departed servers.
  for (const RaftServer& h : v.have) {
    if (Find(v.want, h.id) != nullptr) continue;
    if (h.id == v.self_id) {
      return Step(Kind::kHandOn, h, "handing leadership on before leaving the configuration");
    }
    std::set<uint64_t> next = voters;
    next.erase(h.id);
    if (Decidable(next, v.heard, &why)) return Step(Kind::kRemove, h, "removing " + Server(h.id));
    blocked.push_back("removing " + Server(h.id) + ": " + why);
  }
  // New members, as standbys (a promotion is a step of its own).
  for (const RaftServer& w : v.want) {
    if (Find(v.have, w.id) != nullptr) continue;
    if (v.backing_off.count(w.id) != 0) {
      blocked.push_back("adding " + Server(w.id) + ": backing off after a change given up");
      continue;
    }
    if (Decidable(voters, v.heard, &why)) {
      return Step(Kind::kAdd, {w.id, w.address, RaftRole::kStandby},
                  "adding " + Server(w.id) + " as a standby");
    }
    blocked.push_back("adding " + Server(w.id) + ": " + why);
  }
  // Voters that lose their vote, before any server gains one.
  for (const RaftServer& w : v.want) {
    const RaftServer* h = Find(v.have, w.id);
    if (h == nullptr || h->role != RaftRole::kVoter || w.role == RaftRole::kVoter) continue;
    if (w.id == v.self_id) {
      return Step(Kind::kHandOn, w, "handing leadership on before losing its vote");
    }
    std::set<uint64_t> next = voters;
    next.erase(w.id);
    const std::string what = "making " + Server(w.id) + " a " + RaftRoleName(w.role);
    if (Decidable(next, v.heard, &why)) return Step(Kind::kAssign, {w.id, "", w.role}, what);
    blocked.push_back(what + ": " + why);
  }
  // Other roles: promotions (and a spare left by an add that stopped half way).
  for (const RaftServer& w : v.want) {
    const RaftServer* h = Find(v.have, w.id);
    if (h == nullptr || h->role == w.role) continue;
    const std::string what = "making " + Server(w.id) + " a " + RaftRoleName(w.role);
    std::set<uint64_t> next = voters;
    if (w.role == RaftRole::kVoter) {
      if (v.backing_off.count(w.id) != 0) {
        blocked.push_back(what + ": backing off after a change given up");
        continue;
      }
      if (!v.heard(w.id)) {
        blocked.push_back(what + ": it does not answer");
        continue;
      }
      next.insert(w.id);
    }
    if (Decidable(next, v.heard, &why)) return Step(Kind::kAssign, {w.id, "", w.role}, what);
    blocked.push_back(what + ": " + why);
  }
  ConfigurationStep none;
  for (const std::string& b : blocked) none.waiting += (none.waiting.empty() ? "" : "; ") + b;
  return none;
}

}  // namespace shardkv::cluster
