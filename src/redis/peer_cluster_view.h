// PeerClusterView: the node's ClusterView, from its MapStore and its members' stats replies
// (asked over the node-to-node connections, this node's own through its request handler).
//
// A Fetch asks every member that is not down in parallel, waits at most `timeout` for each, and
// caches the answer for `cache_for`, so cluster-aware clients that ask CLUSTER SLOTS on every
// connection do not multiply stats calls.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "net/peer_pool.h"
#include "net/server.h"
#include "redis/cluster_view.h"

namespace shardkv::redis {

struct PeerClusterViewOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds timeout{500};
  std::chrono::milliseconds cache_for{1000};
};

class PeerClusterView : public ClusterView, public std::enable_shared_from_this<PeerClusterView> {
 public:
  // REQUIRES: the pointers outlive every Fetch callback.
  PeerClusterView(PeerClusterViewOptions options, cluster::MapStore* maps, net::PeerPool* peers,
                  net::RequestHandler* self);

  std::shared_ptr<const ClusterMap> Map() const override;
  void Fetch(std::function<void(std::vector<NodeView>)> done) override;

 private:
  const PeerClusterViewOptions options_;
  cluster::MapStore* maps_;
  net::PeerPool* peers_;
  net::RequestHandler* self_;

  mutable common::Mutex mu_;
  std::vector<NodeView> cached_ GUARDED_BY(mu_);
  uint64_t cached_epoch_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point cached_at_ GUARDED_BY(mu_);
};

}  // namespace shardkv::redis
