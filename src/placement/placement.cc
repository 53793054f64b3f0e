#include "shardkv/placement.h"

#include <cmath>
#include <unordered_set>

namespace shardkv {

Status ValidateNodes(const std::vector<NodeSpec>& nodes) {
  if (nodes.empty()) return Status::InvalidArgument("membership is empty");
  std::unordered_set<std::string_view> seen;
  for (const NodeSpec& n : nodes) {
    if (n.name.empty()) return Status::InvalidArgument("node name is empty");
    if (!std::isfinite(n.weight) || n.weight <= 0) {
      return Status::InvalidArgument("node '" + n.name + "' has weight " +
                                     std::to_string(n.weight) + "; weights must be > 0");
    }
    if (!seen.insert(n.name).second) {
      return Status::InvalidArgument("duplicate node '" + n.name + "'");
    }
  }
  return Status::OK();
}

Status Placement::CheckReplicaCount(size_t n) const {
  if (n == 0 || n > nodes_.size()) {
    return Status::InvalidArgument("asked for " + std::to_string(n) + " replicas of " +
                                   std::to_string(nodes_.size()) + " nodes");
  }
  return Status::OK();
}

StatusOr<Algorithm> ParseAlgorithm(std::string_view name) {
  if (name == "ring") return Algorithm::kRing;
  if (name == "jump") return Algorithm::kJump;
  if (name == "maglev") return Algorithm::kMaglev;
  if (name == "rendezvous" || name == "hrw") return Algorithm::kRendezvous;
  if (name == "ketama") return Algorithm::kKetama;
  if (name == "modulo" || name == "mod") return Algorithm::kModulo;
  return Status::InvalidArgument("unknown algorithm '" + std::string(name) +
                                 "' (expected ring, jump, maglev, rendezvous, ketama, modulo)");
}

std::string_view AlgorithmName(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kJump:
      return "jump";
    case Algorithm::kMaglev:
      return "maglev";
    case Algorithm::kRendezvous:
      return "rendezvous";
    case Algorithm::kKetama:
      return "ketama";
    case Algorithm::kModulo:
      return "modulo";
  }
  return "?";
}

}  // namespace shardkv
