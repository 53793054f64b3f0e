// ShareStats: how evenly a placement spreads keys, measured exactly as the seeds did.
//
// Seed 000's measure(): count the keys per node, turn counts into percentage shares, and report
// the min and max share, the largest absolute deviation from the ideal share (pp = percentage
// points) and the standard deviation of the shares. With weights the ideal differs per node, so
// the deviation of each share is taken from that node's own ideal (w_i / sum w); with equal
// weights this is the seed's formula exactly, since the mean share is then the ideal.
#pragma once

#include <cstdint>
#include <vector>

#include "shardkv/placement.h"

namespace shardkv::lab {

struct ShareStats {
  std::vector<double> shares_pct;  // per node, sums to 100
  std::vector<double> ideal_pct;   // per node, from the weights
  double min_share_pct = 0;
  double max_share_pct = 0;
  double max_dev_pp = 0;  // max |share - ideal|
  double stddev_pp = 0;   // sqrt(mean (share - ideal)^2)

  // REQUIRES: counts.size() == nodes.size() > 0. A total of 0 keys gives all-zero shares.
  static ShareStats Compute(const std::vector<uint64_t>& counts,
                            const std::vector<NodeSpec>& nodes);
};

// Ideal fraction of keys that moves (in %): the share of the node that joins or leaves.
double IdealAddPct(const std::vector<NodeSpec>& nodes, const NodeSpec& added);
double IdealRemovePct(const std::vector<NodeSpec>& nodes, size_t removed);

}  // namespace shardkv::lab
