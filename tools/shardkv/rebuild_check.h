// What `cluster start-node N --rebuild` needs before it may set the node's data aside, checked
// with the nodes that answer (design.md "CLI"). The node's rebuild
// (Node::Impl::Rebuild, StreamSink::Rebuild) fetches the newest map from a seed of its cluster,
// refuses unless the map names it at its own address, and then pulls every range the map places
// on it from the other holders of that range, failing if none of them serves it; a range with no
// other holder (one replica) it silently starts empty. The checks here are exactly those, made
// before anything is touched, plus the one the node cannot make: a range that only this node
// holds would be lost.
//
// Nothing here prints. Thread-safety: JudgeRebuild is a pure function; CheckRebuild uses the
// prober it is given (not shared).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "local_cluster.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::cli {

// Why a rebuild cannot run now. The command's exit code and `cluster status`'s advice switch on
// it, never on the message.
enum class RebuildBlock {
  kNone,              // it can run
  kNoNodeAnswers,     // no other node answered at all
  kOtherCluster,      // only nodes of another cluster answered (they took the ports?)
  kNotMember,         // the newest map does not name the node
  kAddressMismatch,   // the map names the node at another address than it would listen on
  kSoleCopy,          // some range has no holder but this node: a rebuild would lose it
  kNoReplicaAnswers,  // some range has other holders, but none of them answers and can serve
};

struct RebuildVerdict {
  RebuildBlock block = RebuildBlock::kNone;
  std::string why;  // "" when block == kNone; one sentence, ends with what to do instead
};

// The range test alone, on `map`: every range that `map` places on node `id` (in its current or
// pending placement) must have another holder in `serving` (nodes that answer as members of the
// cluster and may be streamed from: not needing repair themselves). kNotMember, kSoleCopy,
// kNoReplicaAnswers or kNone.
RebuildVerdict JudgeRebuild(const ClusterMap& map, uint32_t id, const std::set<uint32_t>& serving);

// What the rebuild will use, when every check passed.
struct RebuildSource {
  std::optional<ClusterMap> map;   // the newest map among the answering nodes
  std::vector<std::string> seeds;  // addresses of the answering nodes of the cluster
  uint16_t port = 0;               // where the map names the node on 127.0.0.1
};

// Every check, asking the other nodes (`others`: the address of each other local node):
// `cluster_id` is the directory's cluster, `listen_port` the port the node would listen on on
// 127.0.0.1 (0: not yet known, then the map's is taken). On success fills `source`.
RebuildVerdict CheckRebuild(uint64_t cluster_id, uint32_t id, uint16_t listen_port,
                            const std::vector<std::string>& others, NodeProber* prober,
                            std::chrono::milliseconds timeout, RebuildSource* source);

// `cluster status`'s advice for node `id` of `map` that must be rebuilt (it needs repair, or lost
// its data): the command when a rebuild can run now (after stopping the node, if `running`),
// else why it cannot and what to do instead, so that following the advice never fails after
// touching data. `serving`: the members that answer and may be streamed from.
std::string RebuildAdvice(const ClusterMap& map, uint32_t id, bool running,
                          const std::set<uint32_t>& serving);

// The exit code for a refusal (cli_common.h): 3 when nodes that must answer do not, else 2.
int RebuildExitCode(RebuildBlock block);

}  // namespace shardkv::cli
