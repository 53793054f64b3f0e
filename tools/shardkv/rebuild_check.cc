// The checks a rebuild needs before any data is set aside (rebuild_check.h).
#include "rebuild_check.h"

#include <algorithm>
#include <charconv>

#include "cli_common.h"
#include "cluster_probe.h"
#include "repair_status.h"
#include "shardkv/hash_ring.h"

namespace shardkv::cli {
namespace {

std::string IdList(const std::set<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

// Start tokens of the pieces over which both placements are constant (as the node's rebuild
// walks them): the arcs of both rings, or every shard.
std::vector<uint64_t> PieceStarts(const ClusterMap& map) {
  std::vector<uint64_t> starts;
  if (map.ring() != nullptr) {
    for (const auto& arc : map.ring()->Ranges()) starts.push_back(arc.range.first);
    if (map.pending_ring() != nullptr) {
      for (const auto& arc : map.pending_ring()->Ranges()) starts.push_back(arc.range.first);
    }
  } else {
    for (uint64_t s = 0; s < map.params().shards; ++s) starts.push_back(s << 32);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

// The port of "127.0.0.1:PORT"; 0 for any other host or a malformed address.
uint16_t LoopbackPort(const std::string& address) {
  const std::string prefix = "127.0.0.1:";
  if (address.rfind(prefix, 0) != 0) return 0;
  unsigned port = 0;
  const char* begin = address.data() + prefix.size();
  const char* end = address.data() + address.size();
  auto [p, ec] = std::from_chars(begin, end, port);
  if (ec != std::errc() || p != end || port > 65535) return 0;
  return static_cast<uint16_t>(port);
}

}  // namespace

RebuildVerdict JudgeRebuild(const ClusterMap& map, uint32_t id, const std::set<uint32_t>& serving) {
  if (map.FindNode(id) == nullptr) {
    std::set<uint32_t> members;
    for (const ClusterNode& n : map.nodes()) members.insert(n.id);
    return {RebuildBlock::kNotMember,
            "node " + std::to_string(id) + " is not a member of cluster " +
                std::to_string(map.cluster_id()) + " (members: " + IdList(members) +
                "), so there is nothing to rebuild it from; if it never became one (an "
                "interrupted 'cluster add-node'), remove its directory with 'shardkv cluster "
                "forget-node " +
                std::to_string(id) + "'"};
  }
  // The distinct sets of other holders of the node's ranges (current or pending placement).
  std::set<std::vector<uint32_t>> other_sets;
  for (uint64_t first : PieceStarts(map)) {
    std::vector<uint32_t> holders = map.Replicas(first);
    if (map.has_pending()) {
      for (uint32_t h : map.PendingReplicas(first)) {
        if (std::find(holders.begin(), holders.end(), h) == holders.end()) holders.push_back(h);
      }
    }
    if (std::find(holders.begin(), holders.end(), id) == holders.end()) continue;
    holders.erase(std::remove(holders.begin(), holders.end(), id), holders.end());
    std::sort(holders.begin(), holders.end());
    other_sets.insert(std::move(holders));
  }
  std::set<uint32_t> needed;  // holders of ranges none of whose other holders serves
  for (const std::vector<uint32_t>& others : other_sets) {
    if (others.empty()) {
      return {RebuildBlock::kSoleCopy,
              "no other node holds a copy of some of node " + std::to_string(id) +
                  "'s ranges (replication factor " + std::to_string(map.EffectiveReplicas()) +
                  "): a rebuild would start them empty and lose their keys; its own data is "
                  "their only copy, so start it without --rebuild"};
    }
    if (std::none_of(others.begin(), others.end(),
                     [&](uint32_t h) { return serving.count(h) != 0; })) {
      needed.insert(others.begin(), others.end());
    }
  }
  if (!needed.empty()) {
    return {RebuildBlock::kNoReplicaAnswers,
            "no other replica of some of node " + std::to_string(id) +
                "'s ranges answers (they are held by node(s) " + IdList(needed) +
                ", none of which answers and can serve them): start those nodes first ('shardkv "
                "cluster start-node ID'), then rebuild"};
  }
  return {};
}

RebuildVerdict CheckRebuild(uint64_t cluster_id, uint32_t id, uint16_t listen_port,
                            const std::vector<std::string>& others, NodeProber* prober,
                            std::chrono::milliseconds timeout, RebuildSource* source) {
  const ClusterView view = AskCluster(cluster_id, others, prober, timeout);
  if (!view.map && view.answered == 0) {
    return {RebuildBlock::kNoNodeAnswers,
            "no other node answers" +
                std::string(others.empty() ? " (the directory holds no other node)" : "") +
                ", so node " + std::to_string(id) +
                " has nothing to rebuild from: start the other nodes first ('shardkv cluster "
                "up' or 'shardkv cluster start-node ID'), then rebuild"};
  }
  if (!view.map) {
    return {RebuildBlock::kOtherCluster,
            "no other node of cluster " + std::to_string(cluster_id) + " answers (" + view.foreign +
                ": another cluster took the ports?): stop what holds them and start this "
                "cluster's nodes first, then rebuild"};
  }
  const ClusterMap& map = *view.map;
  const ClusterNode* self = map.FindNode(id);
  uint16_t mapped = 0;
  if (self != nullptr) {
    mapped = LoopbackPort(self->address);
    if (mapped == 0 || (listen_port != 0 && mapped != listen_port)) {
      return {RebuildBlock::kAddressMismatch,
              "the map names node " + std::to_string(id) + " at " + self->address +
                  ", but it would listen on 127.0.0.1:" + std::to_string(listen_port) +
                  "; a rebuilt node must come back at the address the map names"};
    }
  }
  std::set<uint32_t> serving;
  for (uint32_t member : view.members_answering) {
    if (member == id) continue;
    const NodeProbe& p = view.probes.at(map.FindNode(member)->address);
    // A node that needs repair itself is no stream source (design.md "Needs repair").
    if (!p.stats || ReadRepairReport(*p.stats).reason) continue;
    serving.insert(member);
  }
  RebuildVerdict v = JudgeRebuild(map, id, serving);
  if (v.block != RebuildBlock::kNone) return v;
  source->map = map;
  source->seeds = view.seeds;
  source->port = mapped;
  return v;
}

std::string RebuildAdvice(const ClusterMap& map, uint32_t id, bool running,
                          const std::set<uint32_t>& serving) {
  const RebuildVerdict v = JudgeRebuild(map, id, serving);
  if (v.block != RebuildBlock::kNone) return "a rebuild cannot run now: " + v.why;
  const std::string rebuild =
      "rebuild it with 'shardkv cluster start-node " + std::to_string(id) + " --rebuild'";
  if (!running) return rebuild;
  return "stop it ('shardkv cluster stop-node " + std::to_string(id) + "'), then " + rebuild;
}

int RebuildExitCode(RebuildBlock block) {
  switch (block) {
    case RebuildBlock::kNone:
      return kExitOk;
    case RebuildBlock::kNoNodeAnswers:
    case RebuildBlock::kOtherCluster:
    case RebuildBlock::kNoReplicaAnswers:
      return kExitUnreachable;
    case RebuildBlock::kNotMember:
    case RebuildBlock::kAddressMismatch:
    case RebuildBlock::kSoleCopy:
      return kExitUsage;
  }
  return kExitFailed;
}

}  // namespace shardkv::cli
