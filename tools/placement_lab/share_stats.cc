#include "placement_lab/share_stats.h"

#include <algorithm>
#include <cmath>

namespace shardkv::lab {
namespace {

double TotalWeight(const std::vector<NodeSpec>& nodes) {
  double total = 0;
  for (const NodeSpec& n : nodes) total += n.weight;
  return total;
}

}  // namespace

ShareStats ShareStats::Compute(const std::vector<uint64_t>& counts,
                               const std::vector<NodeSpec>& nodes) {
  ShareStats s;
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  double total_weight = TotalWeight(nodes);
  s.shares_pct.resize(counts.size());
  s.ideal_pct.resize(counts.size());
  s.min_share_pct = 100;
  double sum_sq = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    double share = total == 0 ? 0 : 100.0 * static_cast<double>(counts[i]) / total;
    double ideal = 100.0 * nodes[i].weight / total_weight;
    s.shares_pct[i] = share;
    s.ideal_pct[i] = ideal;
    s.min_share_pct = std::min(s.min_share_pct, share);
    s.max_share_pct = std::max(s.max_share_pct, share);
    s.max_dev_pp = std::max(s.max_dev_pp, std::abs(share - ideal));
    sum_sq += (share - ideal) * (share - ideal);
  }
  s.stddev_pp = counts.empty() ? 0 : std::sqrt(sum_sq / counts.size());
  return s;
}

double IdealAddPct(const std::vector<NodeSpec>& nodes, const NodeSpec& added) {
  return 100.0 * added.weight / (TotalWeight(nodes) + added.weight);
}

double IdealRemovePct(const std::vector<NodeSpec>& nodes, size_t removed) {
  return 100.0 * nodes[removed].weight / TotalWeight(nodes);
}

}  // namespace shardkv::lab
