#include "rebalance/rebalancer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <random>
#include <set>

namespace shardkv::rebalance {
namespace {

net::ResponseBody Error(const ::shardkv::Status& s) {
  return net::ErrorResponse{s.code(), s.message()};
}

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string Arg(const std::map<std::string, std::string>& args, const std::string& k,
                const std::string& fallback = "") {
  auto it = args.find(k);
  return it == args.end() ? fallback : it->second;
}

std::string Describe(const ChangeRecord& r) {
  return "change " + std::to_string(r.change_id) + " (" + r.kind + " node " +
         std::to_string(r.node_id) + ", " + std::string(ChangeStateName(r.state)) + ")";
}

}  // namespace

Rebalancer::Rebalancer(RebalancerOptions options, MapStore* maps, PeerPool* peers,
                       Membership* membership)
    : options_(options), maps_(maps), peers_(peers), membership_(membership) {}

Rebalancer::~Rebalancer() { Stop(); }

void Rebalancer::Start() {
  drive_thread_ = std::thread([this] { DriveLoop(); });
  // Two admin workers: a long plan/begin (it counts every key) never blocks status queries
  // behind it completely, and the thread count stays fixed however many requests arrive.
  for (int i = 0; i < 2; ++i) admin_threads_.emplace_back([this] { AdminLoop(); });
}

void Rebalancer::AdminLoop() {
  for (;;) {
    std::pair<net::AdminRequest, Reply> item;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !admin_queue_.empty(); });
      if (stopping_) return;
      item = std::move(admin_queue_.front());
      admin_queue_.pop_front();
    }
    item.second(Admin(item.first));
  }
}

void Rebalancer::Stop() {
  std::deque<std::pair<net::AdminRequest, Reply>> left;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    left.swap(admin_queue_);
  }
  wake_.notify_all();
  if (drive_thread_.joinable()) drive_thread_.join();
  for (auto& t : admin_threads_) t.join();
  admin_threads_.clear();
  for (auto& [request, done] : left) {
    done(Error(::shardkv::Status::Unavailable("node is shutting down")));
  }
}

void Rebalancer::AddCounters(std::map<std::string, int64_t>* counters) const {
  (*counters)["rebalance_commits"] = static_cast<int64_t>(commits_.load());
  (*counters)["rebalance_task_errors"] = static_cast<int64_t>(task_errors_.load());
}

void Rebalancer::HandleAdmin(net::AdminRequest request, Reply done) {
  // Planning counts every key and commits wait for acknowledgements: never on an I/O thread.
  std::unique_lock lock(mu_);
  if (stopping_) {
    lock.unlock();
    return done(Error(::shardkv::Status::Unavailable("node is shutting down")));
  }
  admin_queue_.emplace_back(std::move(request), std::move(done));
  wake_.notify_all();
}

bool Rebalancer::ChangeStillRunning(uint64_t change_id) const {
  auto map = maps_->Current();
  if (!map || !map->has_pending()) return false;
  auto rec = ChangeRecord::Decode(map->change_detail());
  return rec.ok() && rec->change_id == change_id && rec->state == ChangeState::kStreaming;
}

// ---- Admin -------------------------------------------------------------------------------

net::ResponseBody Rebalancer::Admin(const net::AdminRequest& request) {
  const std::string& cmd = request.command;
  if (cmd == "plan" || cmd == "begin") {
    membership_->FetchNewestMap(options_.rpc_timeout);  // never plan from a stale map
  }
  auto map = maps_->Current();
  if (!map) return Error(::shardkv::Status::Unavailable("node has no cluster map"));
  auto current_record = ChangeRecord::Decode(map->change_detail());
  if (cmd == "status") return net::AdminResponse{Report().Encode()};
  if (cmd == "plan" || cmd == "begin") {
    if (map->has_pending() && current_record.ok()) {
      return Error(::shardkv::Status::FailedPrecondition(
          Describe(*current_record) +
          " is still running; only one change at a time (watch it, or cancel it while it is "
          "streaming)"));
    }
    ClusterMap target = *map;
    auto report = PlanChange(request.args, &target);
    if (!report.ok()) return Error(report.status());
    if (cmd == "plan") return net::AdminResponse{report->Encode()};
    ChangeRecord rec = report->record;
    rec.state = ChangeState::kStreaming;
    rec.started_ms = WallMs();
    rec.client_errors_at_start = SumClientErrors(*map);
    const uint64_t expected = map->epoch();
    auto s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
      if (cur.epoch() != expected) {
        return ::shardkv::Status::Aborted("the cluster map changed while planning; try again");
      }
      rec.from_epoch = cur.epoch();
      return target.WithChangeDetail(rec.Encode());
    });
    if (!s.ok()) return Error(s);
    spdlog::info("{} committed: {} copies to move in {} stream tasks", Describe(rec),
                 rec.planned_copies, rec.planned_ranges);
    wake_.notify_all();
    return net::AdminResponse{Report().Encode()};
  }
  if (cmd == "cancel" || cmd == "resume" || cmd == "throttle") {
    if (!map->has_pending() || !current_record.ok()) {
      return Error(::shardkv::Status::FailedPrecondition("no change is running"));
    }
    ChangeRecord rec = *current_record;
    if (cmd == "cancel") {
      if (map->stage() != ChangeStage::kJointWrites ||
          (rec.state != ChangeState::kStreaming && rec.state != ChangeState::kFailed)) {
        return Error(::shardkv::Status::FailedPrecondition(
            Describe(rec) +
            " is past streaming: the new replicas already serve reads, so cancel is refused; "
            "it will finish (watch it with `shardkv rebalance watch`)"));
      }
    } else if (cmd == "resume" && rec.state != ChangeState::kFailed) {
      return Error(::shardkv::Status::FailedPrecondition(Describe(rec) +
                                                         " has not failed; nothing to resume"));
    }
    auto s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
      auto now_rec = ChangeRecord::Decode(cur.change_detail());
      if (!cur.has_pending() || !now_rec.ok() || now_rec->change_id != rec.change_id) {
        return ::shardkv::Status::Aborted("the change ended meanwhile");
      }
      ChangeRecord next = *now_rec;
      if (cmd == "cancel") {
        if (cur.stage() != ChangeStage::kJointWrites) {
          return ::shardkv::Status::FailedPrecondition("the change moved past streaming");
        }
        next.state = ChangeState::kCancelled;
        next.finished_ms = WallMs();
        {
          // What had been copied when it was cancelled (the destinations drop it again).
          std::lock_guard lock(mu_);
          if (active_change_ == next.change_id) {
            next.moved_copies = next.moved_tombstones = next.moved_bytes = 0;
            for (const TaskState& t : tasks_) {
              next.moved_copies += t.copies;
              next.moved_tombstones += t.tombstones;
              next.moved_bytes += t.bytes;
            }
          }
        }
        auto cancelled = cur.WithChangeCancelled();
        if (!cancelled.ok()) return cancelled.status();
        return cancelled->WithChangeDetail(next.Encode());
      }
      if (cmd == "resume") {
        next.state = ChangeState::kStreaming;
        next.error.clear();
      } else {
        const std::string rate = Arg(request.args, "rate_mb");
        const std::string streams = Arg(request.args, "streams");
        try {
          if (!rate.empty()) next.rate_bytes_per_s = std::stoull(rate) << 20;
          if (!streams.empty()) next.streams_per_node = std::max(1, std::stoi(streams));
        } catch (const std::exception&) {
          return ::shardkv::Status::InvalidArgument("throttle needs whole numbers");
        }
      }
      return cur.WithChangeDetail(next.Encode());
    });
    if (!s.ok()) return Error(s);
    wake_.notify_all();
    return net::AdminResponse{Report().Encode()};
  }
  return Error(::shardkv::Status::InvalidArgument("unknown rebalance command '" + cmd + "'"));
}

StatusOr<RebalanceReport> Rebalancer::PlanChange(const std::map<std::string, std::string>& args,
                                                 ClusterMap* target) {
  auto map = maps_->Current();
  const std::string kind = Arg(args, "kind");
  ChangeRecord rec;
  rec.kind = kind;
  try {
    rec.node_id = static_cast<uint32_t>(std::stoul(Arg(args, "node_id", "0")));
    const std::string rate = Arg(args, "rate_mb", "32");
    rec.rate_bytes_per_s = std::stoull(rate) << 20;
    rec.streams_per_node = static_cast<uint32_t>(std::max(1, std::stoi(Arg(args, "streams", "2"))));
  } catch (const std::exception&) {
    return ::shardkv::Status::InvalidArgument("bad numeric argument to the rebalancer");
  }
  double weight = 1.0;
  try {
    weight = std::stod(Arg(args, "weight", "1"));
  } catch (const std::exception&) {
    return ::shardkv::Status::InvalidArgument("bad weight");
  }
  StatusOr<ClusterMap> next = ::shardkv::Status::InvalidArgument("kind must be add or remove");
  double total_weight_before = 0;
  for (const ClusterNode& n : map->nodes()) total_weight_before += n.weight;
  if (kind == "add") {
    const std::string address = Arg(args, "address");
    if (address.empty()) return ::shardkv::Status::InvalidArgument("add needs the node's address");
    if (map->FindNode(rec.node_id) != nullptr) {
      return ::shardkv::Status::InvalidArgument("node " + std::to_string(rec.node_id) +
                                                " is already a member");
    }
    next = map->WithNodeJoining({rec.node_id, address, weight, NodeState::kJoining});
    rec.ideal_fraction = weight / (total_weight_before + weight);
  } else if (kind == "remove") {
    const ClusterNode* node = map->FindNode(rec.node_id);
    if (node == nullptr) {
      return ::shardkv::Status::NotFound("node " + std::to_string(rec.node_id) +
                                         " is not a member");
    }
    if (rec.node_id == options_.self_id) {
      return ::shardkv::Status::InvalidArgument("ask another node to remove node " +
                                                std::to_string(rec.node_id) +
                                                " (the driving node must stay in the cluster)");
    }
    rec.ideal_fraction = node->weight / total_weight_before;
    next = map->WithNodeLeaving(rec.node_id);
  }
  if (!next.ok()) return next.status();
  std::random_device rd;
  rec.change_id = ((uint64_t{rd()} << 32) | rd()) | 1;
  rec.from_epoch = map->epoch();

  const auto ranges = AllRanges(*next);
  auto counts = CountRanges(*next, ranges);
  if (!counts.ok()) return counts.status().WithContext("counting keys for the plan");
  RebalanceReport report;
  report.has_change = true;
  report.epoch = map->epoch();
  report.driver = options_.self_id;
  report.from_driver = true;
  std::map<uint32_t, double> before, after;
  double copies_before = 0, copies_after = 0;
  std::map<std::pair<uint32_t, uint32_t>, StreamProgress> pairs;
  for (size_t i = 0; i < ranges.size(); ++i) {
    const MovingRange& r = ranges[i];
    const net::RangeCount& c = (*counts)[i];
    rec.live_keys += c.live;
    for (uint32_t id : r.old_set) before[id] += static_cast<double>(c.live);
    for (uint32_t id : r.new_set) after[id] += static_cast<double>(c.live);
    copies_before += static_cast<double>(c.live * r.old_set.size());
    copies_after += static_cast<double>(c.live * r.new_set.size());
    std::vector<uint32_t> a = r.old_set, b = r.new_set;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    if (a == b) continue;
    rec.remapped_keys += c.live;
    for (const StreamTask& t : AssignTasks({r})) {
      rec.planned_copies += c.live;
      rec.planned_tombstones += c.tombstones;
      rec.planned_bytes += c.bytes;
      ++rec.planned_ranges;
      StreamProgress& p = pairs[{t.sources[0], t.destination}];
      p.source = t.sources[0];
      p.destination = t.destination;
      ++p.ranges_total;
      p.copies_planned += c.live;
      p.bytes_planned += c.bytes;
    }
  }
  rec.total_copies = rec.live_keys * map->EffectiveReplicas();
  for (auto& [k, p] : pairs) report.streams.push_back(p);
  for (const ClusterNode& n : next->nodes()) {
    NodeShare s;
    s.id = n.id;
    s.address = n.address;
    s.state = std::string(NodeStateName(n.state));
    s.share_before = copies_before > 0 ? before[n.id] / copies_before : 0;
    s.share_after = copies_after > 0 ? after[n.id] / copies_after : 0;
    report.shares.push_back(s);
  }
  rec.state = ChangeState::kPlanned;
  report.record = rec;
  *target = *next;
  return report;
}

StatusOr<std::vector<net::RangeCount>> Rebalancer::CountRanges(
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
        return ::shardkv::Status::Unavailable("no replica could count tokens from " +
                                              std::to_string(ranges[i].range.first) + ": " +
                                              errors);
      }
      by_node[candidates.front()].push_back(i);
    }
    todo.clear();
    for (const auto& [id, indexes] : by_node) {
      const ClusterNode* node = map.FindNode(id);
      ::shardkv::Status failed;
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
          failed = ::shardkv::Status::Corruption("bad count reply");
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

int64_t Rebalancer::SumClientErrors(const ClusterMap& map) {
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

RebalanceReport Rebalancer::Report() {
  RebalanceReport report;
  auto map = maps_->Current();
  if (!map) return report;
  auto rec = ChangeRecord::Decode(map->change_detail());
  report.epoch = map->epoch();
  report.driver = map->claimant();
  if (const ClusterNode* d = map->FindNode(map->claimant())) report.driver_address = d->address;
  if (!rec.ok()) return report;
  report.has_change = true;
  report.record = *rec;
  const bool pending = map->has_pending();
  report.from_driver = !pending || map->claimant() == options_.self_id;
  const uint64_t end_ms = rec->finished_ms != 0 ? rec->finished_ms : WallMs();
  report.elapsed_s = rec->started_ms == 0 ? 0 : static_cast<double>(end_ms - rec->started_ms) / 1e3;
  std::lock_guard lock(mu_);
  if (pending && rec->state == ChangeState::kNewOnly && phase_ == "cleanup") {
    report.record.state = ChangeState::kCleanup;
  }
  if (!pending || rec->state != ChangeState::kStreaming || active_change_ != rec->change_id) {
    report.copies_done = rec->moved_copies;
    report.tombstones_done = rec->moved_tombstones;
    report.bytes_done = rec->moved_bytes;
    return report;
  }
  std::map<std::pair<uint32_t, uint32_t>, StreamProgress> pairs;
  for (const TaskState& t : tasks_) {
    StreamProgress& p = pairs[{t.task.sources[0], t.task.destination}];
    p.source = t.task.sources[0];
    p.destination = t.task.destination;
    ++p.ranges_total;
    p.ranges_done += t.done ? 1 : 0;
    p.copies_planned += t.planned_copies;
    p.bytes_planned += t.planned_bytes;
    p.copies_done += t.copies;
    p.bytes_done += t.bytes;
    report.copies_done += t.copies;
    report.tombstones_done += t.tombstones;
    report.bytes_done += t.bytes;
  }
  for (auto& [k, p] : pairs) report.streams.push_back(p);
  return report;
}

// ---- Commits -----------------------------------------------------------------------------

::shardkv::Status Rebalancer::Commit(
    const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make) {
  std::lock_guard commit_lock(commit_mu_);
  auto current = maps_->Current();
  if (!current) return ::shardkv::Status::Unavailable("node has no cluster map");
  auto content = make(*current);
  if (!content.ok()) return content.status();
  const ClusterMap next = content->WithEpoch(current->epoch() + 1, options_.self_id);
  return InstallEverywhere(*current, next);
}

::shardkv::Status Rebalancer::InstallEverywhere(const ClusterMap& current, const ClusterMap& next) {
  const std::string bytes = next.Encode();
  // Sends the proposal to `targets` in parallel; one status per target.
  auto send = [&](const std::vector<ClusterNode>& targets) {
    std::vector<std::future<::shardkv::Status>> replies;
    for (const ClusterNode& n : targets) {
      auto promise = std::make_shared<std::promise<::shardkv::Status>>();
      replies.push_back(promise->get_future());
      net::Request req;
      req.epoch = current.epoch();
      req.body = net::InstallMapRequest{bytes, current.epoch(), current.FindNode(n.id) == nullptr};
      const uint32_t id = n.id;
      peers_->Call(n.address, std::move(req), options_.rpc_timeout,
                   [promise, id](StatusOr<net::Response> reply) {
                     ::shardkv::Status s = reply.ok() ? reply->status() : reply.status();
                     promise->set_value(s.ok() ? s : s.WithContext("node " + std::to_string(id)));
                   });
    }
    std::vector<::shardkv::Status> out;
    for (auto& r : replies) out.push_back(r.get());
    return out;
  };
  auto unreachable = [](const ::shardkv::Status& s) {
    return s.code() == ::shardkv::Status::Code::kUnavailable ||
           s.code() == ::shardkv::Status::Code::kTimeout ||
           s.code() == ::shardkv::Status::Code::kIOError;
  };
  // Every member of the next map (a removed node learns nothing more). A member that cannot be
  // reached is tolerated only once gossip also finds it down; it pulls the map when it is back.
  std::vector<ClusterNode> targets;
  for (const ClusterNode& n : next.nodes()) {
    if (n.id != options_.self_id) targets.push_back(n);
  }
  std::vector<::shardkv::Status> results = send(targets);
  std::string refusals;
  for (const auto& s : results) {
    // A refusal (another map with this epoch, another cluster) means this proposal lost: do not
    // install it here.
    if (!s.ok() && !unreachable(s)) refusals += (refusals.empty() ? "" : "; ") + s.ToString();
  }
  if (!refusals.empty()) {
    return ::shardkv::Status::Aborted("epoch " + std::to_string(next.epoch()) +
                                      " refused: " + refusals);
  }
  net::InstallMapRequest local{bytes, current.epoch(), false};
  net::ResponseBody mine = membership_->InstallNow(local);
  if (const auto* e = std::get_if<net::ErrorResponse>(&mine)) {
    return e->ToStatus().WithContext("installing epoch " + std::to_string(next.epoch()) +
                                     " locally");
  }
  ++commits_;
  // Committed. The next stage may start only once every live member acknowledged, so keep
  // re-sending to the ones that did not until they do or are found down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::vector<ClusterNode> again;
    std::string waiting;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (results[i].ok()) continue;
      if (membership_->Settled() && !membership_->IsAlive(targets[i].id)) continue;
      again.push_back(targets[i]);
      waiting += (waiting.empty() ? "" : "; ") + results[i].ToString();
    }
    if (again.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      return ::shardkv::Status::Unavailable("epoch " + std::to_string(next.epoch()) +
                                            " not acknowledged: " + waiting);
    }
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(200), [&] { return stopping_; });
      if (stopping_) return ::shardkv::Status::Aborted("node is stopping");
    }
    std::vector<::shardkv::Status> retried = send(again);
    results.assign(targets.size(), ::shardkv::Status::OK());
    for (size_t i = 0, j = 0; i < targets.size() && j < again.size(); ++i) {
      if (targets[i].id == again[j].id) results[i] = retried[j++];
    }
  }
  spdlog::info("committed epoch {} ({} members)", next.epoch(), targets.size() + 1);
  return ::shardkv::Status::OK();
}

// ---- Driving -----------------------------------------------------------------------------

bool Rebalancer::IsDriver(const ClusterMap& map) const {
  if (map.claimant() == options_.self_id) return true;
  if (!membership_->Settled() || membership_->IsAlive(map.claimant())) return false;
  for (const ClusterNode& n : map.nodes()) {
    if (n.id < options_.self_id && membership_->IsAlive(n.id)) return false;
  }
  return map.FindNode(options_.self_id) != nullptr;
}

void Rebalancer::DriveLoop() {
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, options_.tick, [&] { return stopping_; });
      if (stopping_) return;
    }
    DriveOnce();
  }
}

void Rebalancer::DriveOnce() {
  auto map = maps_->Current();
  if (!map || !map->has_pending()) return;
  auto rec = ChangeRecord::Decode(map->change_detail());
  if (!rec.ok() || !IsDriver(*map)) return;
  const uint64_t change = rec->change_id;
  auto same_change = [change](const ClusterMap& cur) -> ::shardkv::Status {
    auto r = ChangeRecord::Decode(cur.change_detail());
    if (!cur.has_pending() || !r.ok() || r->change_id != change) {
      return ::shardkv::Status::Aborted("the change ended meanwhile");
    }
    return ::shardkv::Status::OK();
  };
  if (map->claimant() != options_.self_id) {
    spdlog::warn("claimant node {} is down; node {} takes over {}", map->claimant(),
                 options_.self_id, Describe(*rec));
    static_cast<void>(Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
      SHARDKV_RETURN_IF_ERROR(same_change(cur));
      return cur;
    }));
    return;
  }
  ::shardkv::Status s;
  switch (rec->state) {
    case ChangeState::kStreaming: {
      ::shardkv::Status streamed = RunStreams(*map, *rec);
      if (streamed.code() == ::shardkv::Status::Code::kAborted) return;  // cancelled, stopped
      ChangeRecord next = *rec;
      if (streamed.ok()) {
        std::lock_guard lock(mu_);
        next.state = ChangeState::kReadNew;
        next.moved_copies = next.moved_tombstones = next.moved_bytes = next.resumed_tasks = 0;
        for (const TaskState& t : tasks_) {
          next.moved_copies += t.copies;
          next.moved_tombstones += t.tombstones;
          next.moved_bytes += t.bytes;
          next.resumed_tasks += t.resumed ? 1 : 0;
        }
      } else {
        next.state = ChangeState::kFailed;
        next.error = streamed.ToString();
        spdlog::error("{} failed: {}", Describe(*rec), next.error);
      }
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(same_change(cur));
        ClusterMap m = cur.WithChangeDetail(next.Encode());
        return next.state == ChangeState::kReadNew ? m.WithStage(ChangeStage::kReadNew) : m;
      });
      break;
    }
    case ChangeState::kReadNew: {
      ChangeRecord next = *rec;
      next.state = ChangeState::kNewOnly;
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(same_change(cur));
        return cur.WithStage(ChangeStage::kNewOnly).WithChangeDetail(next.Encode());
      });
      break;
    }
    case ChangeState::kNewOnly: {
      {
        std::lock_guard lock(mu_);
        phase_ = "cleanup";
      }
      ChangeRecord next = *rec;
      next.state = ChangeState::kDone;
      next.finished_ms = WallMs();
      next.client_errors =
          std::max<int64_t>(0, SumClientErrors(*map) - rec->client_errors_at_start);
      s = Commit([&](const ClusterMap& cur) -> StatusOr<ClusterMap> {
        SHARDKV_RETURN_IF_ERROR(same_change(cur));
        auto committed = cur.WithChangeCommitted();
        if (!committed.ok()) return committed.status();
        return committed->WithChangeDetail(next.Encode());
      });
      {
        std::lock_guard lock(mu_);
        phase_.clear();
      }
      if (s.ok()) {
        spdlog::info("{} done: {} copies moved in {:.1f} s", Describe(next), next.moved_copies,
                     static_cast<double>(next.finished_ms - next.started_ms) / 1e3);
      }
      break;
    }
    default:
      return;  // failed: waits for resume or cancel
  }
  if (!s.ok() && s.code() != ::shardkv::Status::Code::kAborted) {
    spdlog::warn("{}: stage commit will be retried: {}", Describe(*rec), s.ToString());
  }
}

}  // namespace shardkv::rebalance
