#include "shardkv/jump_hash.h"

#include <algorithm>
#include <cmath>

namespace shardkv {

int32_t JumpHash(uint64_t key, int32_t buckets) {
  if (buckets <= 0) return -1;
  int64_t b = -1;
  int64_t j = 0;
  while (j < buckets) {
    b = j;
    key = key * 2862933555777941757ULL + 1;
    j = static_cast<int64_t>(static_cast<double>(b + 1) * (static_cast<double>(int64_t{1} << 31) /
                                                           static_cast<double>((key >> 33) + 1)));
  }
  return static_cast<int32_t>(b);
}

StatusOr<std::unique_ptr<JumpPlacement>> JumpPlacement::Build(std::vector<NodeSpec> nodes,
                                                              hash::HashKind hash) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  std::unique_ptr<JumpPlacement> p(new JumpPlacement(std::move(nodes), hash));
  double min_weight = p->nodes_.front().weight;
  for (const NodeSpec& n : p->nodes_) min_weight = std::min(min_weight, n.weight);
  // Buckets are positional: node i's buckets come before node i+1's, so appending a node only
  // appends buckets (Jump's minimal-movement case) and removing the last node only drops the
  // last buckets.
  for (uint32_t i = 0; i < p->nodes_.size(); ++i) {
    const double copies = std::max(1.0, std::round(p->nodes_[i].weight / min_weight));
    if (copies > 1e6) return Status::InvalidArgument("weight ratio too large for jump buckets");
    p->bucket_owner_.insert(p->bucket_owner_.end(), static_cast<size_t>(copies), i);
  }
  if (p->bucket_owner_.size() > INT32_MAX) return Status::InvalidArgument("too many buckets");
  return p;
}

Status JumpPlacement::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  out->clear();
  const size_t total = bucket_owner_.size();
  const size_t start = JumpHash(token, static_cast<int32_t>(total));
  for (size_t step = 0; step < total && out->size() < n; ++step) {
    const uint32_t owner = bucket_owner_[(start + step) % total];
    if (std::find(out->begin(), out->end(), owner) == out->end()) out->push_back(owner);
  }
  return Status::OK();
}

}  // namespace shardkv
