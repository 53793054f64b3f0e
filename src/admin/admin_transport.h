// AdminTransport: the request layer under shardkv::Admin. One connection per node (PeerPool),
// every request stamped with the expected cluster id, and a refusal by a node of another cluster
// told apart from a node's own error (it names both ids).
//
// Thread-safety: not thread-safe (it adopts the cluster id of the first node that answers).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "net/messages.h"
#include "net/peer_pool.h"
#include "net/tls_context.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::admin {

// How a call ended when it did not return a body.
// A node that refused this Admin's secret (Unauthenticated) answered: it is not unreachable, and
// fail-over to the next seed would only be refused the same way.
struct CallFailure {
  bool unreachable = false;  // transport failure: the node did not answer
  bool foreign = false;      // the node belongs to another cluster
};

class AdminTransport {
 public:
  // `security`: the secret and TLS context of AdminOptions (net::LoadClientSecurity).
  AdminTransport(uint64_t cluster_id, std::string origin, net::ClientSecurity security = {});

  uint64_t cluster_id() const { return cluster_id_; }
  // Adopts `id` when no id is expected yet (0 is ignored).
  void Adopt(uint64_t id, const std::string& origin);

  // A request carrying the expected cluster id (adopting the node's first when none is set).
  StatusOr<net::ResponseBody> Call(const std::string& address, net::RequestBody body,
                                   std::chrono::milliseconds timeout, CallFailure* failure);
  // The same without any cluster id: for a node that is not a member (yet).
  StatusOr<net::ResponseBody> CallAnyCluster(const std::string& address, net::RequestBody body,
                                             std::chrono::milliseconds timeout, bool* unreachable);
  // The map `address` holds, asked without a cluster id.
  StatusOr<ClusterMap> MapOf(const std::string& address, std::chrono::milliseconds timeout,
                             bool* unreachable);

  // "no node of cluster X" / "no node".
  std::string NoNode() const;

 private:
  std::unique_ptr<net::PeerPool> pool_;
  uint64_t cluster_id_ = 0;
  std::string origin_;
};

}  // namespace shardkv::admin
