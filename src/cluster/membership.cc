#include "cluster/membership.h"

#include <spdlog/spdlog.h>

#include "common/hlc.h"

namespace shardkv::cluster {
namespace {

net::ResponseBody Error(const Status& s) { return net::ErrorResponse::Of(s); }

}  // namespace

Membership::Membership(MembershipOptions options, MapStore* maps, net::PeerPool* peers,
                       std::shared_ptr<Coordinator> coordinator, HintStore* hints)
    : options_(options),
      maps_(maps),
      peers_(peers),
      coordinator_(std::move(coordinator)),
      hints_(hints),
      clock_(options.self_id, options.max_clock_offset_ms, 3 * options.gossip_interval) {}

bool Membership::ClockAgrees(uint32_t id) const {
  common::MutexLock lock(&mu_);
  return std::find(verdict_.agreeing.begin(), verdict_.agreeing.end(), id) !=
         verdict_.agreeing.end();
}

ClockVerdict Membership::Clock() const {
  common::MutexLock lock(&mu_);
  return verdict_;
}

std::string Membership::HealthyCoordinator() const {
  if (!skewed_.load(std::memory_order_relaxed)) return "";
  ClockVerdict v = Clock();
  if (!v.skewed) return "";
  auto map = maps_->Current();
  if (!map) return "";
  for (uint32_t id : v.agreeing) {
    const ClusterNode* n = map->FindNode(id);
    if (n != nullptr && IsAlive(id)) return n->address;
  }
  // Every node agrees with none other: send it to any live member (its clock is the
  // majority's, by the verdict).
  for (const ClusterNode& n : map->nodes()) {
    if (n.id != options_.self_id && IsAlive(n.id)) return n.address;
  }
  return "";
}

Membership::~Membership() { Stop(); }

void Membership::Start() {
  started_ = std::chrono::steady_clock::now();
  gossip_thread_ = std::thread([this] { GossipLoop(); });
  admin_thread_ = std::thread([this] { AdminLoop(); });
  waiter_thread_ = std::thread([this] { WaiterLoop(); });
}

bool Membership::Settled() const {
  return std::chrono::steady_clock::now() - started_ > 3 * options_.gossip_interval;
}

void Membership::AwaitEpoch(uint64_t epoch, std::chrono::milliseconds timeout,
                            std::function<void(bool)> done) {
  auto map = maps_->Current();
  if (map && map->epoch() >= epoch) return done(true);
  {
    common::MutexLock lock(&mu_);
    if (!stopping_) {
      waiters_.push_back({epoch, std::chrono::steady_clock::now() + timeout, std::move(done)});
      wake_.notify_all();
      return;
    }
  }
  done(false);
}

void Membership::WaiterLoop() {
  auto last_pull = std::chrono::steady_clock::time_point();
  for (;;) {
    std::vector<std::pair<std::function<void(bool)>, bool>> ready;
    bool pull = false;
    {
      common::MutexLock lock(&mu_);
      // Polls: installs come from several paths (admin, gossip, replies), so a short poll is
      // simpler than a notification from each.
      const auto poll_end =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(waiters_.empty() ? 200 : 20);
      while (!stopping_) {
        if (!lock.WaitUntil(wake_, poll_end)) break;
      }
      if (stopping_) {
        for (Waiter& w : waiters_) ready.emplace_back(std::move(w.done), false);
        waiters_.clear();
      } else {
        auto map = maps_->Current();
        const uint64_t epoch = map ? map->epoch() : 0;
        const auto now = std::chrono::steady_clock::now();
        for (auto it = waiters_.begin(); it != waiters_.end();) {
          if (it->epoch <= epoch || now >= it->deadline) {
            ready.emplace_back(std::move(it->done), it->epoch <= epoch);
            it = waiters_.erase(it);
          } else {
            ++it;
          }
        }
        // Give an install already under way a moment, then fetch from the peers.
        pull = !waiters_.empty() && now - last_pull > std::chrono::milliseconds(200);
        if (pull) last_pull = now;
      }
    }
    for (auto& [done, ok] : ready) done(ok);
    {
      common::MutexLock lock(&mu_);
      if (stopping_ && waiters_.empty()) return;
    }
    if (pull) FetchNewestMap(options_.ping_timeout);
  }
}

void Membership::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (gossip_thread_.joinable()) gossip_thread_.join();
  if (admin_thread_.joinable()) admin_thread_.join();
  if (waiter_thread_.joinable()) waiter_thread_.join();
  // Installs still queued are refused rather than dropped silently.
  std::deque<std::pair<net::InstallMapRequest, std::function<void(net::ResponseBody)>>> left;
  {
    common::MutexLock lock(&mu_);
    left.swap(installs_);
  }
  for (auto& [req, done] : left) done(Error(Status::Unavailable("node is shutting down")));
}

bool Membership::IsAlive(uint32_t id) const {
  if (id == options_.self_id) return true;
  common::MutexLock lock(&mu_);
  const auto now = std::chrono::steady_clock::now();
  auto it = last_seen_.find(id);
  if (it == last_seen_.end()) {
    auto first = first_asked_.emplace(id, now).first;
    return now - first->second < 3 * options_.gossip_interval;
  }
  return now - it->second < 3 * options_.gossip_interval;
}

void Membership::HandleInstall(net::InstallMapRequest request,
                               std::function<void(net::ResponseBody)> done) {
  {
    common::MutexLock lock(&mu_);
    if (!stopping_) {
      installs_.emplace_back(std::move(request), std::move(done));
      wake_.notify_all();
      return;
    }
  }
  done(Error(Status::Unavailable("node is shutting down")));
}

void Membership::AdminLoop() {
  // Installs run here, not on a network thread, because the epoch barrier may wait.
  for (;;) {
    std::pair<net::InstallMapRequest, std::function<void(net::ResponseBody)>> item;
    {
      common::MutexLock lock(&mu_);
      while (!stopping_ && installs_.empty()) lock.Wait(wake_);
      if (stopping_) return;
      item = std::move(installs_.front());
      installs_.pop_front();
    }
    item.second(Install(item.first));
  }
}

net::ResponseBody Membership::Install(const net::InstallMapRequest& request) {
  auto offered = ClusterMap::Decode(request.map);
  if (!offered.ok()) return Error(offered.status());
  auto current = maps_->Current();
  if (offered->FindNode(options_.self_id) == nullptr) {
    return Error(Status::FailedPrecondition("the offered map does not include node " +
                                            std::to_string(options_.self_id)));
  }
  Status s;
  if (request.adopt) {
    if (options_.cluster_id != 0 && offered->cluster_id() != options_.cluster_id) {
      return Error(Status::FailedPrecondition(
          "node " + std::to_string(options_.self_id) + " was started as a member of cluster " +
          std::to_string(options_.cluster_id) + ", not " + std::to_string(offered->cluster_id())));
    }
    const bool standalone =
        current && current->nodes().size() == 1 && current->nodes().front().id == options_.self_id;
    if (current && !standalone && current->cluster_id() != offered->cluster_id()) {
      return Error(Status::FailedPrecondition("node " + std::to_string(options_.self_id) +
                                              " already belongs to cluster " +
                                              std::to_string(current->cluster_id())));
    }
    s = current && current->cluster_id() == offered->cluster_id() ? maps_->Install(*offered)
                                                                  : maps_->Reset(*offered);
    if (s.ok() && adopt_hook_) s = adopt_hook_(*offered);
    // A node with a skewed clock must know it before it coordinates anything in this cluster.
    if (s.ok()) MeasureClocks();
  } else if (request.committed) {
    // Decided by consensus: install it if it is newer (a node may have missed epochs), then the
    // barrier and the acknowledgement the leader waits for before the next stage.
    if (!current) {
      return Error(Status::FailedPrecondition("node " + std::to_string(options_.self_id) +
                                              " is unformed (not in a cluster yet)"));
    }
    if (current->cluster_id() != offered->cluster_id()) {
      return Error(Status(Status::Code::kFailedPrecondition, Status::Reason::kWrongCluster,
                          "map is for another cluster"));
    }
    if (current->epoch() < offered->epoch()) s = maps_->Install(*offered);
  } else {
    if (!current) {
      return Error(Status::FailedPrecondition(
          "node " + std::to_string(options_.self_id) +
          " is unformed (not in a cluster yet): only an adopting install can form it"));
    }
    if (current->cluster_id() != offered->cluster_id()) {
      return Error(Status(Status::Code::kFailedPrecondition, Status::Reason::kWrongCluster,
                          "map is for another cluster"));
    }
    if (request.expected_epoch != 0 && current->epoch() != request.expected_epoch &&
        current->ContentHash() != offered->ContentHash()) {
      return Error(Status(Status::Code::kAborted, Status::Reason::kUnexpectedEpoch,
                          "epoch is " + std::to_string(current->epoch()) + ", not the expected " +
                              std::to_string(request.expected_epoch)));
    }
    s = maps_->Install(*offered);
  }
  if (!s.ok()) return Error(s);
  // Epoch barrier: the new write rule is in force; acknowledge only once everything coordinated
  // under an older epoch has finished (every replica call returned or timed out).
  if (!coordinator_->WaitForOlderEpochs(
          offered->epoch(), std::chrono::steady_clock::now() + options_.barrier_timeout)) {
    return Error(Status::Timeout("requests of older epochs are still in flight"));
  }
  spdlog::info("installed cluster map epoch {} ({} nodes)", offered->epoch(),
               offered->nodes().size());
  return net::InstallMapResponse{true, maps_->Current()->epoch()};
}

void Membership::GossipLoop() {
  for (;;) {
    {
      common::MutexLock lock(&mu_);
      const auto interval_end = std::chrono::steady_clock::now() + options_.gossip_interval;
      while (!stopping_) {
        if (!lock.WaitUntil(wake_, interval_end)) break;
      }
      if (stopping_) return;
    }
    GossipOnce();
    JudgeClock();
    ReplayHints();
  }
}

void Membership::GossipOnce() {
  auto map = maps_->Current();
  if (!map) return;
  for (const ClusterNode& node : map->nodes()) {
    if (node.id == options_.self_id) continue;
    net::Request ping;
    ping.epoch = map->epoch();
    ping.cluster_id = map->cluster_id();
    ping.body = net::PingRequest{};
    const uint32_t id = node.id;
    const std::string address = node.address;
    const uint64_t my_epoch = map->epoch();
    const uint64_t sent_ms = common::HlcClock::WallClockMs();
    peers_->Call(address, std::move(ping), options_.ping_timeout,
                 [this, id, address, my_epoch, sent_ms](StatusOr<net::Response> reply) {
                   if (!reply.ok() || !reply->ok()) return;
                   clock_.Record(id, sent_ms, common::HlcClock::WallClockMs(),
                                 reply->wall_clock_ms);
                   {
                     common::MutexLock lock(&mu_);
                     last_seen_[id] = std::chrono::steady_clock::now();
                   }
                   // The pong carries the newer map when ours is older (request epoch older).
                   if (reply->epoch > my_epoch) {
                     auto installed = maps_->InstallIfNewer(reply->epoch, reply->cluster_map);
                     if (installed.ok() && *installed) {
                       spdlog::info("gossip: adopted map epoch {}", reply->epoch);
                     }
                   }
                 });
  }
}

void Membership::MeasureClocks() {
  auto map = maps_->Current();
  if (!map) return;
  std::vector<std::future<void>> pending;
  for (const ClusterNode& node : map->nodes()) {
    if (node.id == options_.self_id) continue;
    auto done = std::make_shared<std::promise<void>>();
    pending.push_back(done->get_future());
    net::Request ping;
    ping.cluster_id = map->cluster_id();
    ping.body = net::PingRequest{};
    const uint32_t id = node.id;
    const uint64_t sent_ms = common::HlcClock::WallClockMs();
    peers_->Call(node.address, std::move(ping), options_.ping_timeout,
                 [this, id, sent_ms, done](StatusOr<net::Response> reply) {
                   if (reply.ok() && reply->ok()) {
                     clock_.Record(id, sent_ms, common::HlcClock::WallClockMs(),
                                   reply->wall_clock_ms);
                   }
                   done->set_value();
                 });
  }
  for (auto& f : pending) f.wait();
  JudgeClock();
}

void Membership::JudgeClock() {
  auto map = maps_->Current();
  if (!map) return;
  std::vector<uint32_t> members;
  for (const ClusterNode& n : map->nodes()) members.push_back(n.id);
  ClockVerdict v = clock_.Judge(members);
  bool was = false;
  {
    common::MutexLock lock(&mu_);
    was = verdict_.skewed;
    verdict_ = v;
  }
  skewed_ = v.skewed;
  if (v.skewed && !was) {
    spdlog::warn(
        "node {}: {}; it stops assigning timestamps and sends client requests on to "
        "a node whose clock agrees, until its clock is back",
        options_.self_id, v.reason);
  } else if (!v.skewed && was) {
    spdlog::info(
        "node {}: clock back within max_clock_offset_ms of the cluster ({} ms off); "
        "coordinating again",
        options_.self_id, v.offset_ms);
  }
}

void Membership::PullMapFrom(const std::string& address) {
  net::Request req;
  req.body = net::GetClusterMapRequest{};
  auto reply = peers_->CallSync(address, std::move(req), options_.ping_timeout);
  if (!reply.ok() || !reply->ok()) return;
  const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
  if (body == nullptr) return;
  auto map = ClusterMap::Decode(body->map);
  if (map.ok()) static_cast<void>(maps_->Install(*map));
}

void Membership::FetchNewestMap(std::chrono::milliseconds timeout) {
  auto map = maps_->Current();
  if (!map) return;
  for (const ClusterNode& node : map->nodes()) {
    if (node.id != options_.self_id) PullMapFrom(node.address);
  }
}

void Membership::ReplayHints() {
  auto map = maps_->Current();
  if (!map) return;
  for (uint32_t target : hints_->Targets()) {
    const ClusterNode* node = map->FindNode(target);
    if (node == nullptr) {
      // It left the cluster (removed, or a join cancelled): its ranges were streamed to their
      // new owners, so its hints would never be sent and would keep tombstone GC suspended.
      auto dropped = hints_->Discard(target);
      if (dropped.ok()) {
        spdlog::info("deleted {} hints for node {}: it is not in the cluster map (epoch {})",
                     *dropped, target, map->epoch());
      } else {
        spdlog::warn("deleting the hints for removed node {}: {}", target,
                     dropped.status().ToString());
      }
      continue;
    }
    if (!IsAlive(target)) continue;
    const ClusterNode copy = *node;
    const uint64_t epoch = map->epoch();
    auto sent = hints_->Replay(
        target, options_.hint_replay_per_tick,
        [&](uint64_t token, const std::string& key, const storage::Envelope& env) {
          // Re-resolved against the current map: a target that no
          // longer holds the token gets nothing (the range moved with
          // its data; joint writes and streams covered the new owners).
          if (!map->Holds(target, token)) return Status::OK();
          std::promise<Status> p;
          coordinator_->SendReplicaWrite(copy, epoch, token, key, env,
                                         [&p](Status s) { p.set_value(std::move(s)); });
          return p.get_future().get();
        });
    if (sent.ok() && *sent > 0) spdlog::info("replayed {} hints to node {}", *sent, target);
  }
}

}  // namespace shardkv::cluster
