// Rendezvous (highest random weight) hashing (Thaler & Ravishankar, 1998), weighted by the
// logarithmic method (Schindelhauer & Schomaker, 2005; as in "Weighted distributed hash tables"):
// score(node, key) = -weight / ln(u), with u = hash(key, node) mapped into (0, 1). The owner is
// the node with the highest score; the replicas are the top n. Adding a node only takes keys
// (those it now scores highest on); removing one only moves its own keys.
//
// Worked example: two nodes of equal weight and a key with u_a = 0.9, u_b = 0.5:
// score_a = -1/ln 0.9 = 9.49, score_b = -1/ln 0.5 = 1.44, so a owns it, and Replicas = {a, b}.
//
// Cost is O(N) per lookup: the lab includes it for its movement properties, not its speed.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv {

class Rendezvous final : public Placement {
 public:
  static StatusOr<std::unique_ptr<Rendezvous>> Build(std::vector<NodeSpec> nodes,
                                                     hash::HashKind hash = hash::HashKind::kXxh3);

  std::string_view algorithm() const override { return "rendezvous"; }
  uint64_t KeyToken(std::string_view key) const override { return hash::Hash64(hash_, key); }
  uint32_t Owner(uint64_t token) const override;
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override { return node_seeds_.capacity() * sizeof(uint64_t); }

 private:
  Rendezvous(std::vector<NodeSpec> nodes, hash::HashKind hash)
      : Placement(std::move(nodes)), hash_(hash) {}
  double Score(uint64_t token, size_t node) const;

  hash::HashKind hash_;
  std::vector<uint64_t> node_seeds_;  // per-node hash of the name, mixed with the token
};

}  // namespace shardkv
