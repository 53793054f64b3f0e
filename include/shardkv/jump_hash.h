// Jump consistent hash (Lamping & Veach, "A Fast, Minimal Memory, Consistent Hash Algorithm",
// arXiv:1406.2294, 2014).
//
// JumpHash(key, n) maps a 64-bit key uniformly onto buckets [0, n). Growing n to n+1 moves only
// the keys that land in the new bucket (about 1/(n+1) of them), which is what a later online
// shard split relies on. Its limit: buckets are numbered, so removing a bucket in the middle
// renumbers every bucket after it (about 50% of keys move on average).
//
// Worked example (reference vectors): JumpHash(0xdeadbeef, 4) == 3, JumpHash(0xdeadbeef, 5) == 3,
// JumpHash(0xdeadbeef, 6) == 5; JumpHash(1, 7) == 6.
//
// JumpPlacement uses it directly over the node list (the placement lab's "jump"), with weights
// by repeated registration: a node of weight w owns round(w / min_weight) buckets. shardkv's
// cluster uses Jump into a fixed number of shards instead, plus a ShardMap (shard_map.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv {

// Returns the bucket in [0, buckets) for key; returns -1 when buckets <= 0.
int32_t JumpHash(uint64_t key, int32_t buckets);

class JumpPlacement final : public Placement {
 public:
  static StatusOr<std::unique_ptr<JumpPlacement>> Build(
      std::vector<NodeSpec> nodes, hash::HashKind hash = hash::HashKind::kXxh3);

  std::string_view algorithm() const override { return "jump"; }
  uint64_t KeyToken(std::string_view key) const override { return hash::Hash64(hash_, key); }
  uint32_t Owner(uint64_t token) const override {
    return bucket_owner_[JumpHash(token, static_cast<int32_t>(bucket_owner_.size()))];
  }
  // The owner's bucket, then the following buckets (wrapping), skipping repeated nodes.
  Status Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const override;
  size_t MemoryBytes() const override { return bucket_owner_.capacity() * sizeof(uint32_t); }

 private:
  JumpPlacement(std::vector<NodeSpec> nodes, hash::HashKind hash)
      : Placement(std::move(nodes)), hash_(hash) {}

  hash::HashKind hash_;
  std::vector<uint32_t> bucket_owner_;
};

}  // namespace shardkv
