// Anti-entropy repair (design.md "Anti-entropy"): the options and summary of Admin::Repair and
// `shardkv repair`.
//
// A repair compares the hash trees of every replica of each token range the scope covers, built
// by a scan of each replica's data, and streams the records of the differing leaves both ways,
// last-write-wins per register, so that every replica ends with the newest version of each key,
// tombstones included. Ranges whose replica set a pending membership change moves are skipped
// (and counted): run the repair again once the change ended.
//
// A node that needs repair (its hints expired on another node) is brought back by it: it compares
// every range it holds with their other replicas (before the other nodes compare theirs), and
// once all were compared its mark is cleared, unless another replica of a range may have purged a
// tombstone it lacks: that range fails and the node must be rebuilt (design.md "Needs repair").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "shardkv/token_range.h"

namespace shardkv {

struct RepairOptions {
  // 0: every range of the cluster, each compared by its first replica. Otherwise every range
  // this node holds, compared by it (it must answer).
  uint32_t node_id = 0;
  // Only the tokens of this range (clipped to each range it overlaps).
  TokenRange tokens;
  // How long one request to a node may run before it reports its progress (the admin then
  // asks it to continue).
  uint32_t slice_ms = 2000;
};

// Records written to one replica.
struct RepairStreamed {
  uint32_t node_id = 0;
  uint64_t keys = 0;
  uint64_t bytes = 0;  // key and value bytes
};

struct RepairSummary {
  uint64_t ranges_compared = 0;
  uint64_t ranges_differed = 0;  // at least one leaf differed between replicas
  uint64_t ranges_skipped = 0;   // in transition: a membership change moves their replicas
  uint64_t ranges_failed = 0;    // a replica failed: not (fully) repaired
  uint64_t leaves_differed = 0;
  uint64_t keys_fetched = 0;  // records of the differing leaves read from the replicas
  uint64_t bytes_fetched = 0;
  uint64_t tree_bytes = 0;  // tree queries and replies exchanged (frames)
  // Written to each replica: the records it lacked (or held older). Ascending node id.
  std::vector<RepairStreamed> streamed;
  uint64_t keys_streamed = 0;  // the sum over `streamed`
  uint64_t bytes_streamed = 0;
  // Why ranges failed, and nodes that did not answer (at most a few per node).
  std::vector<std::string> failures;
  // Nodes asked to compare that did not answer or refused: the ranges they compare are not
  // repaired (their first slices may have been).
  std::vector<uint32_t> failed_nodes;
  // Nodes that needed repair and still do after it (design.md "Needs repair"): a range of theirs
  // failed, or was refused because another replica may have purged a tombstone they lack (then
  // only `shardkv cluster start-node N --rebuild` brings them back). A node that needed repair
  // and is not listed here is back: it serves replica reads and streams again.
  std::vector<uint32_t> still_need_repair;
  double duration_s = 0;

  // Every range in scope was compared and repaired (differences found and fixed included).
  bool complete() const {
    return ranges_failed == 0 && failed_nodes.empty() && still_need_repair.empty();
  }
};

// Reported after each slice of each node.
struct RepairProgress {
  uint32_t node_id = 0;       // the node comparing now
  uint64_t ranges_done = 0;   // compared, failed or skipped so far, all nodes
  uint64_t ranges_total = 0;  // known so far (each node tells its own at its first slice)
  uint32_t nodes_done = 0;
  uint32_t nodes_total = 0;
  uint64_t keys_streamed = 0;
};

using RepairProgressFn = std::function<void(const RepairProgress&)>;

}  // namespace shardkv
