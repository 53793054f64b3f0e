#include "shardkv/shard_map.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <unordered_map>

#include "shardkv/jump_hash.h"

namespace shardkv {
namespace {

// Weighted ideal share of `total` units per node, where no node may hold more than `cap`
// (a node holds a shard at most once). Water-filling: cap the nodes whose proportional share
// exceeds `cap`, then split what is left among the rest, until nobody exceeds it.
std::vector<double> WaterFill(const std::vector<NodeSpec>& nodes, double total, double cap) {
  std::vector<double> ideal(nodes.size(), 0);
  std::vector<bool> capped(nodes.size(), false);
  for (;;) {
    double left = total, weight = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (capped[i]) {
        left -= cap;
      } else {
        weight += nodes[i].weight;
      }
    }
    bool changed = false;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (capped[i]) continue;
      ideal[i] = weight > 0 ? left * nodes[i].weight / weight : 0;
      if (ideal[i] > cap) {
        capped[i] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (capped[i]) ideal[i] = cap;
  }
  return ideal;
}

// Adds `units` to counts one at a time, each to the node furthest below its ideal that is
// still under its cap. Ties go to the lower index, so the result is deterministic. Keeping
// every step greedy on the deficit keeps each count within +-1 of its ideal.
void Distribute(int64_t units, std::vector<int32_t>& counts, const std::vector<double>& ideal,
                const std::vector<int32_t>& cap) {
  for (; units > 0; --units) {
    int best = -1;
    for (size_t i = 0; i < counts.size(); ++i) {
      if (counts[i] >= cap[i]) continue;
      if (best < 0 || ideal[i] - counts[i] > ideal[best] - counts[best]) best = static_cast<int>(i);
    }
    if (best < 0) return;
    ++counts[best];
  }
}

// Bipartite b-matching by augmenting paths (Kuhn's algorithm with node capacities): assigns
// items to nodes, node i taking at most cap[i] items, along edges allowed(item, node).
// Run() may be called in phases with wider edge sets or capacities: assignments from earlier
// phases are kept unless an augmenting path reroutes them, which is how "keep the old primary
// where possible" and "prefer non-primary donors" are expressed without a cost-flow solver.
class CapacitatedMatcher {
 public:
  using Allowed = std::function<bool(size_t item, uint32_t node)>;

  // Items are visited in a fixed pseudo-random order. Visiting them in index order would hand a
  // receiving node a contiguous block of shards, correlating nodes' shard sets; after a few
  // changes that correlation can make the balanced targets unreachable by minimal moves.
  CapacitatedMatcher(size_t items, size_t nodes)
      : match_(items, -1), holders_(nodes), order_(items) {
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(), [](size_t a, size_t b) {
      return hash::Fmix64(a + 0x5eed) < hash::Fmix64(b + 0x5eed);
    });
  }

  void Run(const std::vector<int32_t>& cap, const Allowed& allowed) {
    cap_ = &cap;
    allowed_ = &allowed;
    for (size_t item : order_) {
      if (match_[item] >= 0) continue;
      visited_.assign(holders_.size(), false);
      for (uint32_t node = 0; node < holders_.size(); ++node) {
        if (TryNode(item, node)) break;
      }
    }
  }
  // Per item, the node it was assigned, or -1.
  const std::vector<int64_t>& match() const { return match_; }
  size_t matched() const {
    return std::count_if(match_.begin(), match_.end(), [](int64_t m) { return m >= 0; });
  }

 private:
  bool TryNode(size_t item, uint32_t node) {
    if (visited_[node] || !(*allowed_)(item, node)) return false;
    visited_[node] = true;
    if (static_cast<int32_t>(holders_[node].size()) < (*cap_)[node]) {
      holders_[node].push_back(item);
      match_[item] = node;
      return true;
    }
    for (size_t k = 0; k < holders_[node].size(); ++k) {
      const size_t other = holders_[node][k];
      for (uint32_t alt = 0; alt < holders_.size(); ++alt) {
        if (alt != node && TryNode(other, alt)) {  // `other` now sits on `alt`
          holders_[node][k] = item;
          match_[item] = node;
          return true;
        }
      }
    }
    return false;
  }

  const std::vector<int32_t>* cap_ = nullptr;
  const Allowed* allowed_ = nullptr;
  std::vector<int64_t> match_;
  std::vector<std::vector<size_t>> holders_;
  std::vector<bool> visited_;
  std::vector<size_t> order_;
};

bool RowHas(std::span<const uint32_t> row, uint32_t node) {
  return std::find(row.begin(), row.end(), node) != row.end();
}

}  // namespace

StatusOr<ShardMap> ShardMap::Create(std::vector<NodeSpec> nodes, int32_t shards, int replicas) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  if (shards < 1) return Status::InvalidArgument("shard count must be >= 1");
  if (replicas < 1 || static_cast<size_t>(replicas) > nodes.size()) {
    return Status::InvalidArgument("replication factor " + std::to_string(replicas) +
                                   " needs between 1 and " + std::to_string(nodes.size()) +
                                   " nodes");
  }
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeSpec& a, const NodeSpec& b) { return a.name < b.name; });
  ShardMap map(std::move(nodes), shards, replicas);
  const size_t n = map.nodes_.size();

  std::vector<int32_t> counts(n, 0);
  Distribute(static_cast<int64_t>(shards) * replicas, counts, map.IdealReplicaCounts(),
             std::vector<int32_t>(n, shards));

  // Stripe layout: lay node 0's replicas, then node 1's, ... along positions p = 0..S*R-1 and
  // put position p in shard p % S. A node's run is at most S long, so it never lands in the
  // same shard twice, and every shard receives exactly R positions.
  map.slots_.assign(static_cast<size_t>(shards) * replicas, 0);
  size_t p = 0;
  for (uint32_t node = 0; node < n; ++node) {
    for (int32_t k = 0; k < counts[node]; ++k, ++p) {
      const size_t shard = p % shards, slot = p / shards;
      map.slots_[shard * replicas + slot] = node;
    }
  }
  map.ChoosePrimaries(nullptr);
  return map;
}

StatusOr<ShardMap> ShardMap::FromAssignment(std::vector<NodeSpec> nodes,
                                            std::vector<std::vector<uint32_t>> assignment) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  if (assignment.empty()) return Status::InvalidArgument("shard assignment is empty");
  const size_t replicas = assignment.front().size();
  if (replicas == 0 || replicas > nodes.size()) {
    return Status::InvalidArgument("shard assignment has a bad replication factor");
  }
  ShardMap map(std::move(nodes), static_cast<int32_t>(assignment.size()),
               static_cast<int>(replicas));
  map.slots_.reserve(assignment.size() * replicas);
  for (size_t s = 0; s < assignment.size(); ++s) {
    const auto& row = assignment[s];
    if (row.size() != replicas) {
      return Status::InvalidArgument("shard " + std::to_string(s) + " has " +
                                     std::to_string(row.size()) + " replicas, expected " +
                                     std::to_string(replicas));
    }
    for (size_t k = 0; k < row.size(); ++k) {
      if (row[k] >= map.nodes_.size()) {
        return Status::InvalidArgument("shard " + std::to_string(s) + " names unknown node " +
                                       std::to_string(row[k]));
      }
      if (std::find(row.begin(), row.begin() + k, row[k]) != row.begin() + k) {
        return Status::InvalidArgument("shard " + std::to_string(s) + " holds node " +
                                       std::to_string(row[k]) + " twice");
      }
      map.slots_.push_back(row[k]);
    }
  }
  return map;
}

StatusOr<ShardMap> ShardMap::WithNodeAdded(const NodeSpec& node) const {
  std::vector<NodeSpec> nodes = nodes_;
  nodes.push_back(node);
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  ShardMap next(std::move(nodes), shards_, replicas_);
  next.slots_ = slots_;
  const uint32_t added = static_cast<uint32_t>(next.nodes_.size() - 1);

  // How many replicas the new node takes, and from whom: one at a time from whoever is furthest
  // above its new ideal. Only existing nodes give, only the new node receives.
  const std::vector<double> ideal = next.IdealReplicaCounts();
  std::vector<int32_t> counts = ReplicaCounts();
  counts.push_back(0);
  std::vector<int32_t> give(counts.size(), 0);
  const int32_t take = std::min<int32_t>(shards_, static_cast<int32_t>(ideal[added] + 0.5));
  for (int32_t u = 0; u < take; ++u) {
    int best = -1;
    for (uint32_t i = 0; i < added; ++i) {
      if (best < 0 || counts[i] - ideal[i] > counts[best] - ideal[best]) best = i;
    }
    --counts[best];
    ++give[best];
  }

  // Which shards they give: a matching of shards to donors (the new node may receive each shard
  // only once), so a donor never runs out of eligible shards when another could have swapped.
  // Donors first give shards they do not lead, so primaries (and client routing) move less.
  CapacitatedMatcher matcher(shards_, next.nodes_.size());
  auto in_row = [&](size_t s, uint32_t d) { return RowHas(ShardReplicas(s), d); };
  matcher.Run(give, [&](size_t s, uint32_t d) { return in_row(s, d) && Primary(s) != d; });
  matcher.Run(give, in_row);
  // The planned split can be infeasible when donors share many rows (the new node can take a
  // shard only once). Then let donors that still have slack above ideal - 1 give more, one unit
  // per round, until the new node reaches its share or nobody has slack left.
  while (static_cast<int32_t>(matcher.matched()) < take) {
    bool widened = false;
    for (uint32_t i = 0; i < added; ++i) {
      if (counts[i] - 1 > ideal[i] - 1) {
        --counts[i];
        ++give[i];
        widened = true;
      }
    }
    if (!widened) break;
    matcher.Run(give, in_row);
  }
  const std::vector<int64_t>& match = matcher.match();
  for (int32_t s = 0; s < shards_; ++s) {
    if (match[s] < 0) continue;
    for (int r = 0; r < replicas_; ++r) {
      uint32_t& slot = next.slots_[static_cast<size_t>(s) * replicas_ + r];
      if (slot == static_cast<uint32_t>(match[s])) slot = added;
    }
  }
  next.RepairBalance();
  next.ChoosePrimaries(this);
  return next;
}

StatusOr<ShardMap> ShardMap::WithNodeRemoved(std::string_view name) const {
  auto it =
      std::find_if(nodes_.begin(), nodes_.end(), [&](const NodeSpec& n) { return n.name == name; });
  if (it == nodes_.end()) {
    return Status::NotFound("node '" + std::string(name) + "' is not in the shard map");
  }
  if (nodes_.size() - 1 < static_cast<size_t>(replicas_)) {
    return Status::FailedPrecondition("removing '" + std::string(name) + "' would leave " +
                                      std::to_string(nodes_.size() - 1) + " nodes for " +
                                      std::to_string(replicas_) + " replicas");
  }
  const uint32_t gone = static_cast<uint32_t>(it - nodes_.begin());
  std::vector<NodeSpec> nodes = nodes_;
  nodes.erase(nodes.begin() + gone);
  ShardMap next(std::move(nodes), shards_, replicas_);
  auto renumber = [&](uint32_t i) { return i > gone ? i - 1 : i; };

  // The leaving node's replicas go, one at a time, to whoever is furthest below its new ideal.
  const std::vector<double> ideal = next.IdealReplicaCounts();
  std::vector<int32_t> old_counts = ReplicaCounts();
  std::vector<int32_t> counts;
  for (uint32_t i = 0; i < nodes_.size(); ++i) {
    if (i != gone) counts.push_back(old_counts[i]);
  }
  std::vector<int32_t> before = counts;
  Distribute(old_counts[gone], counts, ideal, std::vector<int32_t>(counts.size(), shards_));
  std::vector<int32_t> receive(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) receive[i] = counts[i] - before[i];

  std::vector<int32_t> orphaned;  // shards that held the leaving node
  for (int32_t s = 0; s < shards_; ++s) {
    if (RowHas(ShardReplicas(s), gone)) orphaned.push_back(s);
  }
  auto not_in_row = [&](size_t k, uint32_t receiver) {
    const uint32_t old_index = receiver >= gone ? receiver + 1 : receiver;
    return !RowHas(ShardReplicas(orphaned[k]), old_index);
  };
  CapacitatedMatcher matcher(orphaned.size(), counts.size());
  matcher.Run(receive, not_in_row);
  // If distinctness makes the planned split infeasible, widen: first up to each node's ceiling,
  // then without limit (always feasible: a row lacks at least one of the N-1 >= R survivors).
  for (size_t i = 0; i < counts.size() && matcher.matched() < orphaned.size(); ++i) {
    receive[i] =
        std::max<int32_t>(receive[i], static_cast<int32_t>(std::ceil(ideal[i])) - before[i]);
  }
  if (matcher.matched() < orphaned.size()) matcher.Run(receive, not_in_row);
  if (matcher.matched() < orphaned.size()) {
    matcher.Run(std::vector<int32_t>(counts.size(), shards_), not_in_row);
  }
  const std::vector<int64_t>& match = matcher.match();
  for (size_t k = 0; k < orphaned.size(); ++k) {
    if (match[k] < 0) {
      return Status::Internal("no node can take shard " + std::to_string(orphaned[k]) +
                              " of leaving node '" + std::string(name) + "'");
    }
  }
  next.slots_.resize(slots_.size());
  size_t k = 0;
  for (int32_t s = 0; s < shards_; ++s) {
    const bool is_orphan = k < orphaned.size() && orphaned[k] == s;
    for (int r = 0; r < replicas_; ++r) {
      const size_t at = static_cast<size_t>(s) * replicas_ + r;
      next.slots_[at] = slots_[at] == gone ? static_cast<uint32_t>(match[k]) : renumber(slots_[at]);
    }
    if (is_orphan) ++k;
  }
  // Primaries are compared through the old map, whose indexes differ; ChoosePrimaries matches
  // them by name.
  next.RepairBalance();
  next.ChoosePrimaries(this);
  return next;
}

void ShardMap::RepairBalance() {
  // Minimal moves alone cannot always reach +-1 balance: the receiving node can take a shard
  // only once, and after several changes the leaving (or giving) node's shards may overlap the
  // receiver's too much. Then, and only then, move a replica between two other nodes: from the
  // node furthest above its ideal to the one furthest below, in a shard that has the first and
  // lacks the second. Each move lowers the squared deviation, so the loop ends.
  const std::vector<double> ideal = IdealReplicaCounts();
  std::vector<int32_t> counts = ReplicaCounts();
  const size_t n = nodes_.size();
  for (int guard = 0; guard < shards_ * replicas_; ++guard) {
    size_t under = 0, over = 0;
    for (size_t i = 1; i < n; ++i) {
      if (ideal[i] - counts[i] > ideal[under] - counts[under]) under = i;
      if (counts[i] - ideal[i] > counts[over] - ideal[over]) over = i;
    }
    if (ideal[under] - counts[under] <= 1.0 && counts[over] - ideal[over] <= 1.0) return;
    // Move from the most loaded node that can give `under` a shard.
    bool moved = false;
    std::vector<size_t> givers(n);
    std::iota(givers.begin(), givers.end(), 0);
    std::sort(givers.begin(), givers.end(),
              [&](size_t a, size_t b) { return counts[a] - ideal[a] > counts[b] - ideal[b]; });
    for (size_t giver : givers) {
      if (counts[giver] - ideal[giver] <= 0) break;
      if (giver == under) continue;
      for (int32_t sh = 0; sh < shards_ && !moved; ++sh) {
        auto row = ShardReplicas(sh);
        if (RowHas(row, static_cast<uint32_t>(under))) continue;
        uint32_t* slot = &slots_[static_cast<size_t>(sh) * replicas_];
        uint32_t* at = std::find(slot, slot + replicas_, static_cast<uint32_t>(giver));
        if (at == slot + replicas_) continue;
        *at = static_cast<uint32_t>(under);
        --counts[giver];
        ++counts[under];
        moved = true;
      }
      if (moved) break;
    }
    if (!moved) return;
  }
}

void ShardMap::ChoosePrimaries(const ShardMap* previous) {
  const size_t n = nodes_.size();
  std::vector<int32_t> replica_counts = ReplicaCounts();
  std::vector<int32_t> primary_caps(n, 0);
  Distribute(shards_, primary_caps, IdealPrimaryCounts(), replica_counts);

  // The previous primary of each shard, as an index into this map (or -1).
  std::vector<int64_t> old_primary(shards_, -1);
  if (previous != nullptr && previous->shards_ == shards_) {
    std::unordered_map<std::string_view, uint32_t> by_name;
    for (uint32_t i = 0; i < n; ++i) by_name[nodes_[i].name] = i;
    for (int32_t s = 0; s < shards_; ++s) {
      auto it = by_name.find(previous->nodes_[previous->Primary(s)].name);
      if (it != by_name.end()) old_primary[s] = it->second;
    }
  }
  CapacitatedMatcher matcher(shards_, n);
  auto in_row = [&](size_t s, uint32_t node) { return RowHas(ShardReplicas(s), node); };
  // The old primary may have left the row (it gave its replica away): then it cannot stay.
  matcher.Run(primary_caps,
              [&](size_t s, uint32_t node) { return old_primary[s] == node && in_row(s, node); });
  matcher.Run(primary_caps, in_row);
  const std::vector<int64_t>& match = matcher.match();
  for (int32_t s = 0; s < shards_; ++s) {
    // An unmatched shard (only possible with a degenerate layout) keeps its first replica.
    if (match[s] < 0) continue;
    uint32_t* row = &slots_[static_cast<size_t>(s) * replicas_];
    uint32_t* pos = std::find(row, row + replicas_, static_cast<uint32_t>(match[s]));
    std::rotate(row, pos, pos + 1);  // primary first, the others keep their order
  }
}

int32_t ShardMap::ShardOf(uint64_t key_hash) const { return JumpHash(key_hash, shards_); }

std::vector<int32_t> ShardMap::ReplicaCounts() const {
  std::vector<int32_t> c(nodes_.size(), 0);
  for (uint32_t node : slots_) ++c[node];
  return c;
}

std::vector<int32_t> ShardMap::PrimaryCounts() const {
  std::vector<int32_t> c(nodes_.size(), 0);
  for (int32_t s = 0; s < shards_; ++s) ++c[Primary(s)];
  return c;
}

std::vector<double> ShardMap::IdealReplicaCounts() const {
  return WaterFill(nodes_, static_cast<double>(shards_) * replicas_, shards_);
}

std::vector<double> ShardMap::IdealPrimaryCounts() const {
  return WaterFill(nodes_, shards_, shards_);
}

int64_t ShardMap::CopiesToCreate(const ShardMap& other) const {
  int64_t copies = 0;
  const int32_t shards = std::min(shards_, other.shards_);
  for (int32_t s = 0; s < shards; ++s) {
    for (uint32_t theirs : other.ShardReplicas(s)) {
      const std::string& name = other.nodes_[theirs].name;
      bool present = false;
      for (uint32_t mine : ShardReplicas(s)) present |= nodes_[mine].name == name;
      copies += present ? 0 : 1;
    }
  }
  return copies;
}

StatusOr<std::unique_ptr<ShardedPlacement>> ShardedPlacement::Build(ShardMap map,
                                                                    hash::HashKind hash) {
  return std::unique_ptr<ShardedPlacement>(new ShardedPlacement(std::move(map), hash));
}

Status ShardedPlacement::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  out->clear();
  for (uint32_t r : map_.ShardReplicas(map_.ShardOf(token))) {
    if (out->size() < n) out->push_back(r);
  }
  for (uint32_t i = 0; i < nodes_.size() && out->size() < n; ++i) {
    if (std::find(out->begin(), out->end(), i) == out->end()) out->push_back(i);
  }
  return Status::OK();
}

}  // namespace shardkv
