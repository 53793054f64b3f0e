#include "rebalance/plan.h"

#include <algorithm>
#include <map>
#include <set>

#include "shardkv/hash_ring.h"
#include "shardkv/shard_map.h"

namespace shardkv::rebalance {
namespace {

bool SameSet(std::vector<uint32_t> a, std::vector<uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

bool Contains(const std::vector<uint32_t>& v, uint32_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

// Start tokens of the pieces over which both placements are constant, sorted, starting at 0.
std::vector<uint64_t> PieceStarts(const ClusterMap& map) {
  std::vector<uint64_t> starts;
  if (map.ring() != nullptr) {
    for (const auto& arc : map.ring()->Ranges()) starts.push_back(arc.range.first);
    if (map.pending_ring() != nullptr) {
      for (const auto& arc : map.pending_ring()->Ranges()) starts.push_back(arc.range.first);
    }
  } else {
    for (uint64_t s = 0; s < map.params().shards; ++s) starts.push_back(s << 32);
  }
  std::sort(starts.begin(), starts.end());
  starts.erase(std::unique(starts.begin(), starts.end()), starts.end());
  return starts;
}

void AppendMerged(std::vector<TokenRange>* out, TokenRange r) {
  if (!out->empty() && out->back().last != UINT64_MAX && out->back().last + 1 == r.first) {
    out->back().last = r.last;
  } else {
    out->push_back(r);
  }
}

}  // namespace

std::vector<MovingRange> AllRanges(const ClusterMap& map) {
  const std::vector<uint64_t> starts = PieceStarts(map);
  const bool jump = map.ring() == nullptr;
  const uint64_t end = jump ? (uint64_t{map.params().shards} << 32) - 1 : UINT64_MAX;
  std::vector<MovingRange> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    const uint64_t first = starts[i];
    const uint64_t last = i + 1 < starts.size() ? starts[i + 1] - 1 : end;
    std::vector<uint32_t> o = map.Replicas(first);
    std::vector<uint32_t> n = map.has_pending() ? map.PendingReplicas(first) : o;
    // Merge with the previous piece when nothing distinguishes them (ring mode only: a shard is
    // the unit a jump-mode change moves and checkpoints).
    if (!jump && !out.empty() && out.back().old_set == o && out.back().new_set == n) {
      out.back().range.last = last;
      continue;
    }
    out.push_back({{first, last}, std::move(o), std::move(n)});
  }
  return out;
}

std::vector<MovingRange> MovingRanges(const ClusterMap& map) {
  std::vector<MovingRange> out;
  if (!map.has_pending()) return out;
  for (MovingRange& r : AllRanges(map)) {
    if (!SameSet(r.old_set, r.new_set)) out.push_back(std::move(r));
  }
  return out;
}

std::vector<StreamPiece> AssignPieces(const std::vector<MovingRange>& moving) {
  std::vector<StreamPiece> pieces;
  for (size_t index = 0; index < moving.size(); ++index) {
    const MovingRange& r = moving[index];
    std::vector<uint32_t> joining, leaving, staying;
    for (uint32_t id : r.new_set) {
      if (!Contains(r.old_set, id)) joining.push_back(id);
    }
    for (uint32_t id : r.old_set) {
      (Contains(r.new_set, id) ? staying : leaving).push_back(id);
    }
    std::sort(joining.begin(), joining.end());
    std::sort(leaving.begin(), leaving.end());
    for (size_t i = 0; i < joining.size(); ++i) {
      StreamPiece t;
      t.moving_index = index;
      t.range = r.range;
      t.destination = joining[i];
      // Pair with a distinct leaving replica; when fewer leave than join (the effective RF
      // grows), fall back to the staying ones in turn.
      uint32_t preferred;
      if (i < leaving.size()) {
        preferred = leaving[i];
      } else {
        preferred = staying.empty() ? r.old_set.front() : staying[i % staying.size()];
      }
      t.sources.push_back(preferred);
      for (uint32_t id : r.old_set) {
        if (id != preferred) t.sources.push_back(id);
      }
      // The fallbacks sorted: their order only decides which of them a merge uses first, and a
      // canonical order lets more pieces share a task.
      std::sort(t.sources.begin() + 1, t.sources.end());
      pieces.push_back(std::move(t));
    }
  }
  return pieces;
}

std::vector<StreamTask> AssignTasks(const std::vector<MovingRange>& moving) {
  // Group key -> index of the group's open task (the last one, until it is full).
  std::map<std::pair<uint32_t, std::vector<uint32_t>>, size_t> open;
  std::vector<StreamTask> tasks;
  for (StreamPiece& p : AssignPieces(moving)) {
    auto key = std::make_pair(p.destination, p.sources);
    auto it = open.find(key);
    if (it == open.end() || tasks[it->second].ranges.size() >= kMaxRangesPerTask) {
      StreamTask t;
      t.id = tasks.size();
      t.destination = p.destination;
      t.sources = std::move(p.sources);
      tasks.push_back(std::move(t));
      it = open.insert_or_assign(std::move(key), tasks.size() - 1).first;
    }
    StreamTask& t = tasks[it->second];
    // Adjacent pieces (same sources, a different primary) become one range.
    if (!t.ranges.empty() && t.ranges.back().last != UINT64_MAX &&
        t.ranges.back().last + 1 == p.range.first) {
      t.ranges.back().last = p.range.last;
    } else {
      t.ranges.push_back(p.range);
    }
    t.moving_indexes.push_back(p.moving_index);
  }
  return tasks;
}

std::vector<TokenRange> HeldRanges(const ClusterMap& map, uint32_t node, bool include_pending) {
  std::vector<TokenRange> out;
  for (const MovingRange& r : AllRanges(map)) {
    if (Contains(r.old_set, node) ||
        (include_pending && map.has_pending() && Contains(r.new_set, node))) {
      AppendMerged(&out, r.range);
    }
  }
  return out;
}

std::vector<TokenRange> DestinationRanges(const ClusterMap& map, uint32_t node) {
  std::vector<TokenRange> out;
  for (const MovingRange& r : MovingRanges(map)) {
    if (Contains(r.new_set, node) && !Contains(r.old_set, node)) AppendMerged(&out, r.range);
  }
  return out;
}

std::vector<TokenRange> Subtract(const std::vector<TokenRange>& a,
                                 const std::vector<TokenRange>& b) {
  std::vector<TokenRange> out;
  size_t j = 0;
  for (TokenRange cur : a) {
    bool alive = true;
    while (j < b.size() && b[j].last < cur.first) ++j;
    for (size_t k = j; k < b.size() && b[k].first <= cur.last; ++k) {
      if (b[k].first > cur.first) out.push_back({cur.first, b[k].first - 1});
      if (b[k].last >= cur.last) {
        alive = false;
        break;
      }
      cur.first = b[k].last + 1;
    }
    if (alive) out.push_back(cur);
  }
  return out;
}

}  // namespace shardkv::rebalance
