#include "shardkv/modulo.h"

namespace shardkv {

StatusOr<std::unique_ptr<Modulo>> Modulo::Build(std::vector<NodeSpec> nodes, hash::HashKind hash) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  return std::unique_ptr<Modulo>(new Modulo(std::move(nodes), hash));
}

Status Modulo::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  out->clear();
  const uint32_t owner = Owner(token);
  for (size_t i = 0; i < n; ++i) {
    out->push_back(static_cast<uint32_t>((owner + i) % nodes_.size()));
  }
  return Status::OK();
}

}  // namespace shardkv
