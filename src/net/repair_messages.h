// Plain C++ mirrors of anti_entropy.capnp (design.md "Anti-entropy"): the requests and replies of
// `shardkv repair`, carried by the `antiEntropy` members of Request and Response.
//
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "net/versioned_record.h"

namespace shardkv::net {

struct AeSpan {
  uint64_t first = 0;
  uint64_t last = 0;
  friend bool operator==(const AeSpan&, const AeSpan&) = default;
};

// Node to node: the hashes and key counts of `spans` in the replica's tree of [first, last]
// (storage/range_hash_tree.h), built on a session's first query and kept for its next ones.
struct TreeQuery {
  uint64_t session = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  std::vector<AeSpan> spans;
  bool release = false;  // drop the session's tree; nothing is answered
  // With release, non-zero: the comparing node's word that it repaired [first, last] against
  // every one of `replicas` (its map's set), with no replica failing, from a start whose time
  // less the clock offset is repaired_ms (Unix ms): the replica's GC horizon (gc_horizon.h).
  uint64_t repaired_ms = 0;
  std::vector<uint32_t> replicas;
  friend bool operator==(const TreeQuery&, const TreeQuery&) = default;
};

struct TreeNode {
  uint64_t hash = 0;
  uint64_t count = 0;
  friend bool operator==(const TreeNode&, const TreeNode&) = default;
};

// One record pushed to a replica: the one versioned record type (versioned_record.h).
using RepairEntry = VersionedRecord;

struct ApplyEntries {
  std::vector<RepairEntry> entries;
  friend bool operator==(const ApplyEntries&, const ApplyEntries&) = default;
};

struct ApplyCounts {
  uint64_t applied = 0;
  uint64_t superseded = 0;
  uint64_t duplicate = 0;
  friend bool operator==(const ApplyCounts&, const ApplyCounts&) = default;
};

// Admin to a node: compare and repair the ranges it holds from token `from` on, within
// [first, last]: every range it holds (`all`), or those it is the first replica of. It stops
// after about budget_ms and says where to continue.
struct RepairCommand {
  bool all = false;
  uint64_t from = 0;
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;
  uint32_t budget_ms = 2000;
  friend bool operator==(const RepairCommand&, const RepairCommand&) = default;
};

struct NodeStreamed {
  uint32_t node_id = 0;
  uint64_t keys = 0;
  uint64_t bytes = 0;
  friend bool operator==(const NodeStreamed&, const NodeStreamed&) = default;
};

struct RepairReport {
  uint64_t ranges_compared = 0;
  uint64_t ranges_differed = 0;
  uint64_t ranges_skipped = 0;  // in transition
  uint64_t ranges_failed = 0;
  uint64_t leaves_differed = 0;
  uint64_t keys_fetched = 0;
  uint64_t bytes_fetched = 0;
  uint64_t tree_bytes = 0;
  std::vector<NodeStreamed> streamed;  // ascending node id
  std::vector<std::string> failures;
  uint64_t next = 0;
  bool done = false;
  uint64_t ranges_total = 0;
  friend bool operator==(const RepairReport&, const RepairReport&) = default;
};

struct AntiEntropyRequest {
  std::variant<TreeQuery, ApplyEntries, RepairCommand> op;
  friend bool operator==(const AntiEntropyRequest&, const AntiEntropyRequest&) = default;
};

struct TreeReply {
  std::vector<TreeNode> nodes;  // one per span asked, same order
  friend bool operator==(const TreeReply&, const TreeReply&) = default;
};

struct AntiEntropyResponse {
  std::variant<TreeReply, ApplyCounts, RepairReport> reply;
  friend bool operator==(const AntiEntropyResponse&, const AntiEntropyResponse&) = default;
};

}  // namespace shardkv::net
