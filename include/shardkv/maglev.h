// Maglev consistent hashing (Eisenbud et al., "Maglev: A Fast and Reliable Software Network Load
// Balancer", NSDI 2016), weighted as in Envoy's maglev_lb.
//
// Each node has a preference permutation of the M table slots: offset = h1(name) % M,
// skip = h2(name) % (M - 1) + 1, perm[j] = (offset + j * skip) % M (M prime makes it a full
// permutation). The table is filled in rounds; in each round every node, in name order, takes
// its next preferred empty slot, except that a node with normalized weight w only takes a turn
// when its accumulated weight credit allows (so turns are proportional to weight). A token maps
// to table[token % M]: one array access.
//
// Uniformity is by construction (shares within ~1% when M >= 100 * N, which Build enforces).
// Disruption is near-minimal but not zero: a change can move a few keys between surviving nodes.
//
// Worked example (offsets and skips picked by hand for illustration; real ones come from the
// hashes): M = 7, nodes {a, b}; a: offset 3, skip 2 -> prefers 3,5,0,2,4,6,1;
// b: offset 0, skip 4 -> prefers 0,4,1,5,2,6,3. Rounds: a->3, b->0, a->5, b->4, a->2 (0 taken),
// b->1, a->6. Table = [b,b,a,a,b,a,a].
//
// Thread-safety: immutable after Build(); all methods are const and lock-free.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv {

class Maglev final : public Placement {
 public:
  static constexpr uint32_t kDefaultTableSize = 65537;

  // Errors: membership errors; table_size not prime, or < 100 * nodes.
  static StatusOr<std::unique_ptr<Maglev>> Build(std::vector<NodeSpec> nodes,
                                                 uint32_t table_size = kDefaultTableSize,
                                                 hash::HashKind hash = hash::HashKind::kXxh3);

  std::string_view algorithm() const override { return "maglev"; }
  uint64_t KeyToken(std::string_view key) const override { return hash::Hash64(hash_, key); }
  uint32_t Owner(uint64_t token) const override { return table_[token % table_.size()]; }
  // Continues along the table from the key's slot, collecting distinct nodes.
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override { return table_.capacity() * sizeof(uint32_t); }

  uint32_t table_size() const { return static_cast<uint32_t>(table_.size()); }

 private:
  Maglev(std::vector<NodeSpec> nodes, hash::HashKind hash)
      : Placement(std::move(nodes)), hash_(hash) {}

  hash::HashKind hash_;
  std::vector<uint32_t> table_;
};

}  // namespace shardkv
