// LabMembership: the node list the placement lab measures, plus the node that the "add one node"
// experiment adds.
//
// Names come from a pattern with one integer conversion (default "cache-%02d", as in the seeds:
// cache-00..cache-09, and cache-10 is the node added) or from a file with one name per line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shardkv/placement.h"
#include "shardkv/status.h"

namespace shardkv::lab {

struct MembershipSpec {
  static constexpr int kDefaultNodes = 10;
  static constexpr const char* kDefaultNamePattern = "cache-%02d";
  // At most this many nodes, each weight in (0, kMaxWeight]: any one at its maximum runs within a
  // minute (jump and ketama register a node once per unit of weight).
  static constexpr int kMaxNodes = 200;  // rendezvous is O(nodes) per key: 500 took 45 s
  static constexpr double kMaxWeight = 1000;

  // A pattern if it contains '%', else a file of names.
  std::string names = kDefaultNamePattern;
  // Pattern: the node count (default kDefaultNodes). File: use the first `count` names; all of
  // them when unset.
  std::optional<int> count;
  // One per node, or empty for all 1.
  std::vector<double> weights;
  // Weight of the node added by the "add one node" experiment.
  double added_weight = 1.0;
};

struct LabMembership {
  std::vector<NodeSpec> nodes;
  // Pattern: the pattern's next index. File: the next name in the file if there is one, else
  // "new-node".
  NodeSpec added;
  std::string description;  // e.g. "10 nodes (cache-%02d)"
  bool weighted = false;    // some weight differs from 1

  // Errors: count < 1 or too large, a bad pattern, a missing or short file, a weights count that
  // differs from the node count, a weight that is not > 0, duplicate names.
  static StatusOr<LabMembership> Build(const MembershipSpec& spec);
};

}  // namespace shardkv::lab
