// Modulo: owner = hash(key) % N. The baseline every consistent scheme is measured against:
// going from N to N+1 nodes moves about 1 - 1/(N+1) of all keys.
//
// Worked example: N = 3, token 10 -> node 1; Replicas(10, 2) = {1, 2}.
#pragma once

#include <memory>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv {

class Modulo final : public Placement {
 public:
  static StatusOr<std::unique_ptr<Modulo>> Build(std::vector<NodeSpec> nodes,
                                                 hash::HashKind hash = hash::HashKind::kXxh3);

  std::string_view algorithm() const override { return "modulo"; }
  uint64_t KeyToken(std::string_view key) const override { return hash::Hash64(hash_, key); }
  uint32_t Owner(uint64_t token) const override {
    return static_cast<uint32_t>(token % nodes_.size());
  }
  // The owner, then the next indexes modulo N. Weights are ignored (plain modulo has none).
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override { return 0; }

 private:
  Modulo(std::vector<NodeSpec> nodes, hash::HashKind hash)
      : Placement(std::move(nodes)), hash_(hash) {}
  hash::HashKind hash_;
};

}  // namespace shardkv
