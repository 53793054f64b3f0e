#include "shardkv/rendezvous.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace shardkv {

StatusOr<std::unique_ptr<Rendezvous>> Rendezvous::Build(std::vector<NodeSpec> nodes,
                                                        hash::HashKind hash) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  std::unique_ptr<Rendezvous> r(new Rendezvous(std::move(nodes), hash));
  for (const NodeSpec& n : r->nodes_) r->node_seeds_.push_back(hash::Xxh3(n.name));
  return r;
}

double Rendezvous::Score(uint64_t token, size_t node) const {
  // fmix64 of (token ^ node seed) is a uniform 64-bit value per (key, node) pair; its top 53 bits
  // become u in (0, 1), never 0 so the log is finite.
  const uint64_t h = hash::Fmix64(token ^ node_seeds_[node]);
  const double u = (static_cast<double>(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
  return -nodes_[node].weight / std::log(u);
}

uint32_t Rendezvous::Owner(uint64_t token) const {
  uint32_t best = 0;
  double best_score = Score(token, 0);
  for (uint32_t i = 1; i < nodes_.size(); ++i) {
    const double s = Score(token, i);
    // Equal scores (astronomically rare) go to the smaller name, independent of list order.
    if (s > best_score || (s == best_score && nodes_[i].name < nodes_[best].name)) {
      best = i;
      best_score = s;
    }
  }
  return best;
}

Status Rendezvous::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  std::vector<std::pair<double, uint32_t>> scored;
  scored.reserve(nodes_.size());
  for (uint32_t i = 0; i < nodes_.size(); ++i) scored.push_back({Score(token, i), i});
  auto better = [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first > b.first;
    return nodes_[a.second].name < nodes_[b.second].name;
  };
  std::partial_sort(scored.begin(), scored.begin() + n, scored.end(), better);
  out->clear();
  for (size_t i = 0; i < n; ++i) out->push_back(scored[i].second);
  return Status::OK();
}

}  // namespace shardkv
