#include "placement_lab/comparison.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "shardkv/hash_ring.h"

namespace shardkv::lab {
namespace {

using Clock = std::chrono::steady_clock;

double NsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count();
}

template <typename T>
std::vector<T> Dedupe(const std::vector<T>& in) {
  std::vector<T> out;
  for (const T& v : in) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

std::vector<NodeSpec> Without(const std::vector<NodeSpec>& nodes, size_t index) {
  std::vector<NodeSpec> out = nodes;
  out.erase(out.begin() + static_cast<std::ptrdiff_t>(index));
  return out;
}

double VnodeAdjacencyPct(const HashRing& ring) {
  std::vector<HashRing::Arc> arcs = ring.Ranges();
  // Ranges() splits the arc that wraps past 2^64 - 1 in two; fold it back so each point counts
  // once and the sequence is circular.
  if (arcs.size() > ring.point_count()) arcs.pop_back();
  if (arcs.size() < 2) return 0;
  size_t same = 0;
  for (size_t i = 0; i < arcs.size(); ++i) {
    same += arcs[i].owner == arcs[(i + 1) % arcs.size()].owner;
  }
  return 100.0 * static_cast<double>(same) / static_cast<double>(arcs.size());
}

}  // namespace

std::string Configuration::Label() const {
  std::string label(AlgorithmName(algorithm));
  label += ' ';
  label += hash::HashKindName(hash);
  if (algorithm == Algorithm::kRing) label += " v" + std::to_string(vnodes);
  return label;
}

StatusOr<std::vector<Configuration>> ExpandConfigurations(const CompareOptions& options) {
  std::vector<Algorithm> algorithms = Dedupe(options.algorithms);
  if (algorithms.empty()) {
    algorithms = {Algorithm::kRing,       Algorithm::kJump,   Algorithm::kMaglev,
                  Algorithm::kRendezvous, Algorithm::kKetama, Algorithm::kModulo};
  }
  std::vector<hash::HashKind> hashes = Dedupe(options.hashes);
  if (hashes.empty()) hashes = {hash::HashKind::kXxh3};
  std::vector<int> vnodes = Dedupe(options.vnodes);
  if (vnodes.empty()) vnodes = {160};
  for (int v : vnodes) {
    if (v < 1 || v > CompareOptions::kMaxVnodes) {
      return Status::InvalidArgument("--vnodes must be between 1 and " +
                                     std::to_string(CompareOptions::kMaxVnodes) + ", got " +
                                     std::to_string(v));
    }
  }

  if (options.maglev_table_size > CompareOptions::kMaxMaglevTable) {
    return Status::InvalidArgument("--maglev-table must be at most " +
                                   std::to_string(CompareOptions::kMaxMaglevTable) + ", got " +
                                   std::to_string(options.maglev_table_size));
  }

  std::vector<Configuration> out;
  for (Algorithm a : algorithms) {
    if (a == Algorithm::kKetama) {
      out.push_back({a, hash::HashKind::kMd5, 0});
    } else if (a == Algorithm::kRing) {
      for (int v : vnodes) {
        for (hash::HashKind h : hashes) out.push_back({a, h, v});
      }
    } else {
      for (hash::HashKind h : hashes) out.push_back({a, h, 0});
    }
  }
  return out;
}

PlacementComparison::PlacementComparison(const LabMembership& membership, const KeySet& keys,
                                         uint32_t maglev_table_size)
    : membership_(membership), keys_(keys), maglev_table_size_(maglev_table_size) {
  for (size_t i = 0; i < membership_.nodes.size(); ++i) {
    lab_index_.emplace(membership_.nodes[i].name, static_cast<uint32_t>(i));
  }
}

StatusOr<std::unique_ptr<Placement>> PlacementComparison::Build(
    const Configuration& config, const std::vector<NodeSpec>& nodes) const {
  PlacementOptions options;
  options.hash = config.hash;
  if (config.vnodes > 0) options.vnodes = config.vnodes;
  options.maglev_table_size = maglev_table_size_;
  StatusOr<std::unique_ptr<Placement>> built = MakePlacement(config.algorithm, nodes, options);
  if (!built.ok()) return built.status().WithContext(AlgorithmName(config.algorithm));
  return built;
}

double PlacementComparison::MovedPct(const Placement& changed, const std::string& count_node,
                                     uint64_t* count_node_keys) const {
  // Translate the changed placement's node indexes to the base's; a node the base does not have
  // (the added one) gets an index no base owner can equal.
  const uint32_t kNotInBase = UINT32_MAX;
  // Index whose keys are counted: the named node's, or one no node has when none is named.
  uint32_t counted = kNotInBase - 1;
  std::vector<uint32_t> to_base(changed.node_count());
  for (size_t i = 0; i < changed.node_count(); ++i) {
    const std::string& name = changed.nodes()[i].name;
    auto it = lab_index_.find(name);
    to_base[i] = it == lab_index_.end() ? kNotInBase : it->second;
    if (name == count_node) counted = to_base[i];
  }

  uint64_t moved = 0;
  uint64_t on_node = 0;
  const size_t n = tokens_.size();
  for (size_t k = 0; k < n; ++k) {
    uint32_t owner = to_base[changed.Owner(tokens_[k])];
    moved += owner != owners_[k];
    on_node += owner == counted;
  }
  if (count_node_keys != nullptr) *count_node_keys = on_node;
  return n == 0 ? 0 : 100.0 * static_cast<double>(moved) / static_cast<double>(n);
}

StatusOr<ConfigResult> PlacementComparison::Measure(const Configuration& config) {
  const std::vector<NodeSpec>& nodes = membership_.nodes;
  ConfigResult r;
  r.config = config;

  Clock::time_point start = Clock::now();
  SHARDKV_ASSIGN_OR_RETURN(std::unique_ptr<Placement> base, Build(config, nodes));
  r.build_us = NsSince(start) / 1000.0;
  r.memory_bytes = base->MemoryBytes();

  const size_t n = keys_.size();
  tokens_.resize(n);
  owners_.resize(n);
  // Warm up first, so one-time costs (OpenSSL's lazy init for md5, cold code) do not land on
  // the per-key figure when there are few keys.
  for (size_t k = 0; k < std::min<size_t>(n, 1000); ++k) tokens_[k] = base->KeyToken(keys_[k]);
  start = Clock::now();
  for (size_t k = 0; k < n; ++k) tokens_[k] = base->KeyToken(keys_[k]);
  r.hash_ns_per_key = NsSince(start) / static_cast<double>(n);
  for (size_t k = 0; k < std::min<size_t>(n, 1000); ++k) owners_[k] = base->Owner(tokens_[k]);
  start = Clock::now();
  for (size_t k = 0; k < n; ++k) owners_[k] = base->Owner(tokens_[k]);
  r.owner_ns_per_key = NsSince(start) / static_cast<double>(n);

  // Every implementation keeps nodes() in the order it was given; translate anyway if one
  // ever sorts, since everything below is indexed by the membership's order.
  std::vector<uint32_t> to_lab(base->node_count());
  bool identity = true;
  for (size_t i = 0; i < base->node_count(); ++i) {
    auto it = lab_index_.find(base->nodes()[i].name);
    if (it == lab_index_.end()) {
      return Status::Internal(std::string(AlgorithmName(config.algorithm)) +
                              ": placement reports a node that is not a member");
    }
    to_lab[i] = it->second;
    identity = identity && to_lab[i] == i;
  }
  if (!identity) {
    for (uint32_t& o : owners_) o = to_lab[o];
  }

  if (const auto* ring = dynamic_cast<const HashRing*>(base.get())) {
    r.vnode_adjacency_pct = VnodeAdjacencyPct(*ring);
  }

  std::vector<uint64_t> counts(nodes.size(), 0);
  for (uint32_t o : owners_) ++counts[o];
  r.shares = ShareStats::Compute(counts, nodes);

  std::vector<NodeSpec> grown = nodes;
  grown.push_back(membership_.added);
  SHARDKV_ASSIGN_OR_RETURN(std::unique_ptr<Placement> added, Build(config, grown));
  uint64_t added_keys = 0;
  r.add.moved_pct = MovedPct(*added, membership_.added.name, &added_keys);
  r.add.ideal_pct = IdealAddPct(nodes, membership_.added);
  r.added_node_share_pct = n == 0 ? 0 : 100.0 * static_cast<double>(added_keys) / n;

  // With one node there is nothing to remove: the movements stay NaN ("n/a").
  if (nodes.size() >= 2) {
    size_t last = nodes.size() - 1;
    SHARDKV_ASSIGN_OR_RETURN(std::unique_ptr<Placement> no_last,
                             Build(config, Without(nodes, last)));
    r.remove_last.moved_pct = MovedPct(*no_last, "", nullptr);
    r.remove_last.ideal_pct = IdealRemovePct(nodes, last);

    size_t middle = nodes.size() / 2;
    SHARDKV_ASSIGN_OR_RETURN(std::unique_ptr<Placement> no_middle,
                             Build(config, Without(nodes, middle)));
    r.remove_middle.moved_pct = MovedPct(*no_middle, "", nullptr);
    r.remove_middle.ideal_pct = IdealRemovePct(nodes, middle);
  }
  return r;
}

StatusOr<CompareReport> RunComparison(const CompareOptions& options,
                                      const LabMembership& membership, const KeySet& keys,
                                      const ProgressFn& progress) {
  SHARDKV_ASSIGN_OR_RETURN(std::vector<Configuration> configs, ExpandConfigurations(options));
  // Refused before anything is built: a ring too large for memory would otherwise be found
  // only after minutes of work, or by the OOM killer.
  double weight = membership.added.weight;
  for (const NodeSpec& n : membership.nodes) weight += n.weight;
  for (const Configuration& c : configs) {
    const double points = weight * c.vnodes;
    if (c.algorithm == Algorithm::kRing && points > CompareOptions::kMaxRingPoints) {
      return Status::InvalidArgument(
          "a ring of " + std::to_string(static_cast<uint64_t>(points)) +
          " points (total weight x vnodes) exceeds the lab's limit of " +
          std::to_string(static_cast<uint64_t>(CompareOptions::kMaxRingPoints)) +
          "; use fewer --vnodes or nodes");
    }
  }
  CompareReport report;
  report.keys_description = keys.description();
  report.key_count = keys.size();
  report.membership = membership;
  report.maglev_table_size = options.maglev_table_size;
  PlacementComparison lab(membership, keys, options.maglev_table_size);
  for (size_t i = 0; i < configs.size(); ++i) {
    if (progress) progress(i, configs.size(), configs[i]);
    SHARDKV_ASSIGN_OR_RETURN(ConfigResult r, lab.Measure(configs[i]));
    report.results.push_back(std::move(r));
  }
  return report;
}

}  // namespace shardkv::lab
