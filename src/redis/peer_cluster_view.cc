#include "redis/peer_cluster_view.h"

#include <algorithm>
#include <atomic>
#include <optional>

#include "shardkv/stats.h"

namespace shardkv::redis {
namespace {

// Collects the members' answers; the last one to arrive sorts them and calls `finish`.
struct Collect {
  Collect(size_t n, std::function<void(std::vector<NodeView>)> f)
      : remaining(n), finish(std::move(f)) {}
  void Add(std::optional<NodeView> view) {
    {
      common::MutexLock lock(&mu);
      if (view) views.push_back(std::move(*view));
    }
    if (remaining.fetch_sub(1) != 1) return;
    std::vector<NodeView> out;
    {
      common::MutexLock lock(&mu);
      out = std::move(views);
    }
    std::sort(out.begin(), out.end(),
              [](const NodeView& a, const NodeView& b) { return a.id < b.id; });
    finish(std::move(out));
  }
  common::Mutex mu;
  std::vector<NodeView> views GUARDED_BY(mu);
  std::atomic<size_t> remaining;
  std::function<void(std::vector<NodeView>)> finish;
};

std::optional<NodeView> ViewOf(const ClusterNode& node, const net::Response& reply) {
  const auto* stats = std::get_if<net::StatsResponse>(&reply.body);
  if (stats == nullptr) return std::nullopt;
  NodeView view;
  view.id = node.id;
  view.address = node.address;
  view.counters = stats->counters;
  auto redis = stats->info.find(std::string(stats::redis_address));
  if (redis != stats->info.end()) view.redis_address = redis->second;
  return view;
}

}  // namespace

PeerClusterView::PeerClusterView(PeerClusterViewOptions options, cluster::MapStore* maps,
                                 net::PeerPool* peers, net::RequestHandler* self)
    : options_(options), maps_(maps), peers_(peers), self_(self) {}

std::shared_ptr<const ClusterMap> PeerClusterView::Map() const { return maps_->Current(); }

void PeerClusterView::Fetch(std::function<void(std::vector<NodeView>)> done) {
  auto map = maps_->Current();
  if (map == nullptr) return done({});
  const auto now = std::chrono::steady_clock::now();
  std::vector<NodeView> hit;
  bool have_hit = false;
  {
    common::MutexLock lock(&mu_);
    if (cached_epoch_ == map->epoch() && now - cached_at_ < options_.cache_for) {
      hit = cached_;
      have_hit = true;
    }
  }
  if (have_hit) return done(std::move(hit));

  std::vector<ClusterNode> members;
  for (const ClusterNode& node : map->nodes()) {
    if (node.state != NodeState::kDown) members.push_back(node);
  }
  if (members.empty()) return done({});
  auto self = shared_from_this();
  const uint64_t epoch = map->epoch();
  auto collect = std::make_shared<Collect>(
      members.size(), [self, epoch, done = std::move(done)](std::vector<NodeView> views) {
        {
          common::MutexLock lock(&self->mu_);
          self->cached_ = views;
          self->cached_epoch_ = epoch;
          self->cached_at_ = std::chrono::steady_clock::now();
        }
        done(std::move(views));
      });
  for (const ClusterNode& node : members) {
    net::Request request;
    request.body = net::StatsRequest{};
    auto on_reply = [collect, node](const net::Response& reply) {
      collect->Add(ViewOf(node, reply));
    };
    if (node.id == options_.self_id) {
      self_->Handle(std::move(request), [on_reply](net::Response r) { on_reply(r); });
      continue;
    }
    peers_->Call(node.address, std::move(request), options_.timeout,
                 [collect, on_reply](StatusOr<net::Response> reply) {
                   if (!reply.ok()) return collect->Add(std::nullopt);
                   on_reply(*reply);
                 });
  }
}

}  // namespace shardkv::redis
