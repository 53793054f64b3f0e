// ChangePlanner (change_planner.h): planning a change and the checks before it is committed.
#include "rebalance/change_planner.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "clustermap/cluster_map_builder.h"
#include "shardkv/copy_shares.h"
#include "shardkv/stats.h"

namespace shardkv::rebalance {
namespace {

// A params change's values (0 in the request keeps one), checked with the flag to name.
StatusOr<ClusterParams> ParamsAfter(const ClusterMap& map, const ChangeRequest& change) {
  ClusterParams p = map.params();
  if (change.replicas != 0) p.replication_factor = change.replicas;
  if (change.write_quorum != 0) p.write_quorum = change.write_quorum;
  if (change.read_quorum != 0) p.read_quorum = change.read_quorum;
  const std::string rf = std::to_string(p.replication_factor);
  if (p.write_quorum > p.replication_factor) {
    return Status::InvalidArgument("write quorum " + std::to_string(p.write_quorum) +
                                   " is above the replication factor " + rf +
                                   "; give --write-quorum (1.." + rf + ")");
  }
  if (p.read_quorum > p.replication_factor) {
    return Status::InvalidArgument("read quorum " + std::to_string(p.read_quorum) +
                                   " is above the replication factor " + rf +
                                   "; give --read-quorum (1.." + rf + ")");
  }
  if (p == map.params()) {
    return Status::InvalidArgument("nothing to change: the cluster already has replicas " + rf +
                                   ", write quorum " + std::to_string(p.write_quorum) +
                                   ", read quorum " + std::to_string(p.read_quorum));
  }
  return p;
}

bool SameChange(const ChangeRequest& a, const ChangeRequest& b) {
  return a.kind == b.kind && a.node_id == b.node_id && a.address == b.address &&
         a.weight == b.weight && a.replicas == b.replicas && a.write_quorum == b.write_quorum &&
         a.read_quorum == b.read_quorum;
}

}  // namespace

ChangePlanner::ChangePlanner(uint32_t self_id, std::chrono::milliseconds rpc_timeout,
                             net::PeerPool* peers, cluster::Membership* membership)
    : self_id_(self_id), rpc_timeout_(rpc_timeout), peers_(peers), membership_(membership) {}

uint64_t ChangePlanner::plans_counted() const {
  common::MutexLock lock(&mu_);
  return plans_counted_;
}

StatusOr<ChangePlan> ChangePlanner::Plan(const ClusterMap& map, const ChangeRequest& change,
                                         const ChangeThrottle& throttle, bool reuse) {
  if (throttle.streams_per_node == 0) {
    return Status::InvalidArgument("streams per node must be at least 1");
  }
  const auto now = std::chrono::steady_clock::now();
  std::optional<ChangePlan> plan;
  {
    common::MutexLock lock(&mu_);
    if (reuse && cached_ && cached_->cluster_id == map.cluster_id() &&
        cached_->epoch == map.epoch() && SameChange(cached_->change, change) &&
        now - cached_->made < kPlanReuse) {
      plan = cached_->plan;
    }
  }
  if (plan && change.kind != ChangeKind::kRemove && change.kind != ChangeKind::kParams) {
    // The counts may be reused, the check of the joining node may not: it is one request, and
    // the node could have been given data or another cluster since the plan.
    SHARDKV_RETURN_IF_ERROR(CheckJoiningNode(map, change.node_id, change.address));
  }
  if (!plan) {
    auto counted = Count(map, change);
    if (!counted.ok()) return counted.status();
    plan = std::move(*counted);
    common::MutexLock lock(&mu_);
    ++plans_counted_;
    cached_ = Cached{map.cluster_id(), map.epoch(), change, now, *plan};
  }
  // Every plan is a new change, even one that reuses the counts.
  std::random_device rd;
  ChangeRecord& rec = plan->report.record;
  rec.change_id = ((uint64_t{rd()} << 32) | rd()) | 1;
  rec.rate_bytes_per_s = throttle.rate_bytes_per_s;
  rec.streams_per_node = throttle.streams_per_node;
  return *std::move(plan);
}

StatusOr<ChangePlan> ChangePlanner::Count(const ClusterMap& cur, const ChangeRequest& change) {
  const ClusterMap* map = &cur;
  ChangeRecord rec;
  // A join is recorded as the add it is once its node id is known (change.h, ChangeKind).
  rec.kind = change.kind == ChangeKind::kJoin ? ChangeKind::kAdd : change.kind;
  rec.node_id = change.kind == ChangeKind::kParams ? 0 : change.node_id;
  const double weight = change.weight;  // the map refuses a weight <= 0
  StatusOr<ClusterMap> next = Status::InvalidArgument("unknown change kind");
  double total_weight_before = 0;
  for (const ClusterNode& n : map->nodes()) total_weight_before += n.weight;
  if (change.kind == ChangeKind::kParams) {
    auto params = ParamsAfter(*map, change);
    if (!params.ok()) return params.status();
    rec.params_replicas = params->replication_factor;
    rec.params_write_quorum = params->write_quorum;
    rec.params_read_quorum = params->read_quorum;
    next = clustermap::WithParamsChanging(*map, rec.params_replicas, rec.params_write_quorum,
                                          rec.params_read_quorum);
    // The least a factor change can move: the added copies (none when it shrinks).
    if (next.ok() && next->PendingEffectiveReplicas() > map->EffectiveReplicas()) {
      rec.ideal_fraction =
          static_cast<double>(next->PendingEffectiveReplicas() - map->EffectiveReplicas()) /
          map->EffectiveReplicas();
    }
  } else if (change.kind != ChangeKind::kRemove) {
    const std::string& address = change.address;
    if (address.empty()) return Status::InvalidArgument("add needs the node's address");
    if (map->FindNode(rec.node_id) != nullptr) {
      return Status::InvalidArgument("node " + std::to_string(rec.node_id) +
                                     " is already a member");
    }
    // Before anything is committed: a node of another cluster would be half-joined otherwise.
    SHARDKV_RETURN_IF_ERROR(CheckJoiningNode(*map, rec.node_id, address));
    next = clustermap::WithNodeJoining(*map, {rec.node_id, address, weight, NodeState::kJoining});
    rec.ideal_fraction = weight / (total_weight_before + weight);
  } else {
    const ClusterNode* node = map->FindNode(rec.node_id);
    if (node == nullptr) {
      return Status::NotFound("node " + std::to_string(rec.node_id) + " is not a member");
    }
    if (map->nodes().size() == 1) {
      return Status::InvalidArgument("cannot remove the last node");
    }
    if (rec.node_id == self_id_ && !allow_self_removal_) {
      return Status::InvalidArgument("ask another node to remove node " +
                                     std::to_string(rec.node_id) +
                                     " (the driving node must stay in the cluster)");
    }
    rec.ideal_fraction = node->weight / total_weight_before;
    next = clustermap::WithNodeLeaving(*map, rec.node_id);
  }
  if (!next.ok()) return next.status();
  rec.from_epoch = map->epoch();
  rec.replicas_configured = map->params().replication_factor;
  rec.replicas_before = map->EffectiveReplicas();
  rec.write_quorum_before = map->EffectiveWriteQuorum();
  rec.read_quorum_before = map->EffectiveReadQuorum();
  rec.replicas_after = next->PendingEffectiveReplicas();
  rec.write_quorum_after = next->PendingEffectiveWriteQuorum();
  rec.read_quorum_after = next->PendingEffectiveReadQuorum();

  const auto ranges = AllRanges(*next);
  auto counts = CountRanges(*next, ranges);
  if (!counts.ok()) return counts.status().WithContext("counting keys for the plan");
  ChangeReport report;
  report.has_change = true;
  report.epoch = map->epoch();
  report.driver = self_id_;
  report.from_driver = true;
  // Shares of the copies, weighted by the keys counted: as `cluster status` weighs token ranges.
  CopyShares before, after;
  std::vector<MovingRange> moving;
  std::vector<size_t> moving_to_all;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const MovingRange& r = ranges[i];
    const net::RangeCount& c = (*counts)[i];
    rec.live_keys += c.live;
    before.Add(r.old_set, static_cast<long double>(c.live));
    after.Add(r.new_set, static_cast<long double>(c.live));
    std::vector<uint32_t> a = r.old_set, b = r.new_set;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a == b) continue;
    rec.remapped_keys += c.live;
    moving.push_back(r);
    moving_to_all.push_back(i);
  }
  // The same grouping the driver will stream with (AssignTasks is deterministic for a map).
  std::map<std::pair<uint32_t, uint32_t>, StreamProgress> pairs;
  for (const StreamTask& t : AssignTasks(moving)) {
    ++rec.planned_ranges;
    TaskPlan task{t.id, t.destination, 0, 0, 0};
    StreamProgress& p = pairs[{t.sources[0], t.destination}];
    p.source = t.sources[0];
    p.destination = t.destination;
    ++p.tasks_total;
    p.ranges_total += t.ranges.size();
    for (size_t m : t.moving_indexes) {
      const net::RangeCount& c = (*counts)[moving_to_all[m]];
      ++rec.planned_token_ranges;
      rec.planned_copies += c.live;
      rec.planned_tombstones += c.tombstones;
      rec.planned_bytes += c.bytes;
      p.copies_planned += c.live;
      p.bytes_planned += c.bytes;
      task.copies += c.live;
      task.tombstones += c.tombstones;
      task.bytes += c.bytes;
    }
    rec.task_plans.push_back(task);
  }
  rec.total_copies = rec.live_keys * map->EffectiveReplicas();
  for (auto& [k, p] : pairs) report.streams.push_back(p);
  for (const ClusterNode& n : next->nodes()) {
    NodeShare s;
    s.id = n.id;
    s.address = n.address;
    s.state = std::string(NodeStateName(n.state));
    s.share_before = before.Fraction(n.id);
    s.share_after = after.Fraction(n.id);
    report.shares.push_back(s);
  }
  rec.state = ChangeState::kPlanned;
  report.record = rec;
  return ChangePlan{*std::move(next), std::move(report)};
}

Status ChangePlanner::CheckJoiningNode(const ClusterMap& map, uint32_t node_id,
                                       const std::string& address) {
  net::Request req;
  req.body = net::GetClusterMapRequest{};
  auto reply = peers_->CallSync(address, std::move(req), rpc_timeout_);
  Status s = reply.ok() ? reply->status() : reply.status();
  // An unformed node (no cluster id, no map) is what a join expects: it refuses getClusterMap
  // with reason kUnformed (design.md "Unformed nodes"). It has no map to name its id: its stats
  // do.
  if (s.code() == Status::Code::kFailedPrecondition && s.Is(Status::Reason::kUnformed)) {
    return CheckUnformedNodeId(node_id, address);
  }
  if (!s.ok()) {
    return Status::Unavailable("node at " + address + " does not answer: " + s.ToString());
  }
  const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
  if (body == nullptr) return Status::Corruption("node at " + address + ": no map");
  if (body->map.empty()) return Status::OK();  // no map at all: fresh
  auto theirs = ClusterMap::Decode(body->map);
  if (!theirs.ok()) {
    return Status::FailedPrecondition("node at " + address +
                                      " holds an unreadable map: " + theirs.status().ToString());
  }
  if (theirs->cluster_id() == map.cluster_id()) {
    // Ours: a node of this cluster at that address (a leftover of a cancelled add is fine only
    // if it is this id).
    const ClusterNode* there = theirs->FindNodeByAddress(address);
    if (there != nullptr && there->id != node_id) {
      return Status::FailedPrecondition("node at " + address + " is node " +
                                        std::to_string(there->id) + ", not node " +
                                        std::to_string(node_id));
    }
    return Status::OK();
  }
  // Only an unformed node joins. A node with a map of another cluster belongs to that cluster,
  // even a one-node one (formed by `cluster init`, or a fresh node of shardkv 0.1.0, which made
  // itself one): joining it would drop its identity, and whatever it holds with it.
  const size_t n = theirs->nodes().size();
  return Status::FailedPrecondition(
      "node at " + address + " belongs to cluster " + std::to_string(theirs->cluster_id()) + " (" +
      std::to_string(n) + (n == 1 ? " node" : " nodes") + "), not this cluster " +
      std::to_string(map.cluster_id()) +
      "; only an unformed node can join (a fresh data directory, no --cluster-id)");
}

Status ChangePlanner::CheckUnformedNodeId(uint32_t node_id, const std::string& address) {
  net::Request req;
  req.body = net::StatsRequest{};
  auto reply = peers_->CallSync(address, std::move(req), rpc_timeout_);
  const auto* stats = reply.ok() ? std::get_if<net::StatsResponse>(&reply->body) : nullptr;
  if (stats == nullptr || stats->counters.count(std::string(stats::node_id)) == 0) {
    return Status::Unavailable("node at " + address + " did not report its node id");
  }
  const int64_t reported = stats->counters.at(std::string(stats::node_id));
  if (reported != static_cast<int64_t>(node_id)) {
    return Status::FailedPrecondition("node at " + address + " was started as node " +
                                      std::to_string(reported) + ", not node " +
                                      std::to_string(node_id));
  }
  return Status::OK();
}

StatusOr<std::vector<net::RangeCount>> ChangePlanner::CountRanges(
    const ClusterMap& map, const std::vector<MovingRange>& ranges) {
  // Count each range on one old replica, live ones first; a node that fails is excluded and its
  // ranges go to the next old replica.
  std::vector<net::RangeCount> out(ranges.size());
  std::vector<size_t> todo(ranges.size());
  for (size_t i = 0; i < todo.size(); ++i) todo[i] = i;
  std::set<uint32_t> excluded;
  std::string errors;
  // A paused node still counts as alive for a few seconds; a quick ping keeps the plan from
  // waiting on it for the whole (long) count timeout.
  std::set<uint32_t> involved;
  for (const MovingRange& r : ranges) involved.insert(r.old_set.begin(), r.old_set.end());
  for (uint32_t id : involved) {
    const ClusterNode* node = map.FindNode(id);
    if (node == nullptr) continue;
    net::Request ping;
    ping.body = net::PingRequest{};
    auto pong = peers_->CallSync(node->address, std::move(ping), std::chrono::milliseconds(1000));
    if (!pong.ok() || !pong->ok()) {
      excluded.insert(id);
      errors += (errors.empty() ? "" : "; ") + ("node " + std::to_string(id) + " unreachable");
    }
  }
  for (int round = 0; !todo.empty(); ++round) {
    std::map<uint32_t, std::vector<size_t>> by_node;
    for (size_t i : todo) {
      std::vector<uint32_t> candidates;
      for (uint32_t id : ranges[i].old_set) {
        if (!excluded.count(id) && membership_->IsAlive(id)) candidates.push_back(id);
      }
      for (uint32_t id : ranges[i].old_set) {
        if (!excluded.count(id) && !membership_->IsAlive(id)) candidates.push_back(id);
      }
      if (candidates.empty()) {
        return Status::Unavailable("no replica could count tokens from " +
                                   std::to_string(ranges[i].range.first) + ": " + errors);
      }
      by_node[candidates.front()].push_back(i);
    }
    todo.clear();
    for (const auto& [id, indexes] : by_node) {
      const ClusterNode* node = map.FindNode(id);
      Status failed;
      for (size_t start = 0; start < indexes.size() && failed.ok(); start += 4096) {
        net::CountRangesRequest req;
        const size_t end = std::min(indexes.size(), start + 4096);
        for (size_t k = start; k < end; ++k) {
          const TokenRange& r = ranges[indexes[k]].range;
          req.ranges.push_back({r.first, r.last});
        }
        net::Request request;
        request.epoch = map.epoch();
        request.cluster_id = map.cluster_id();
        request.body = std::move(req);
        auto reply =
            peers_->CallSync(node->address, std::move(request), std::chrono::milliseconds(120000));
        failed = reply.ok() ? reply->status() : reply.status();
        const auto* body =
            failed.ok() ? std::get_if<net::CountRangesResponse>(&reply->body) : nullptr;
        if (failed.ok() && (body == nullptr || body->counts.size() != end - start)) {
          failed = Status::Corruption("bad count reply");
        }
        if (!failed.ok()) break;
        for (size_t k = start; k < end; ++k) out[indexes[k]] = body->counts[k - start];
      }
      if (!failed.ok()) {
        excluded.insert(id);
        errors += (errors.empty() ? "" : "; ") + ("node " + std::to_string(id) + ": ") +
                  failed.ToString();
        todo.insert(todo.end(), indexes.begin(), indexes.end());
      }
    }
  }
  return out;
}

int64_t ChangePlanner::SumClientErrors(const ClusterMap& map) {
  int64_t sum = 0;
  for (const ClusterNode& n : map.nodes()) {
    if (!membership_->IsAlive(n.id)) continue;
    net::Request req;
    req.body = net::StatsRequest{};
    auto reply = peers_->CallSync(n.address, std::move(req), std::chrono::milliseconds(2000));
    if (!reply.ok() || !reply->ok()) continue;
    const auto* stats = std::get_if<net::StatsResponse>(&reply->body);
    if (stats == nullptr) continue;
    auto it = stats->counters.find("client_errors");
    if (it != stats->counters.end()) sum += it->second;
  }
  return sum;
}

}  // namespace shardkv::rebalance
