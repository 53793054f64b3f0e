#include "admin/admin_transport.h"

namespace shardkv::admin {
namespace {

// A transport failure that means the node did not answer (as opposed to refusing the secret).
bool Unreachable(const Status& s) { return s.code() != Status::Code::kUnauthenticated; }

}  // namespace

AdminTransport::AdminTransport(uint64_t cluster_id, std::string origin,
                               net::ClientSecurity security)
    : pool_(std::make_unique<net::PeerPool>(1, std::move(security.auth_secret),
                                            std::move(security.tls))),
      cluster_id_(cluster_id),
      origin_(std::move(origin)) {}

void AdminTransport::Adopt(uint64_t id, const std::string& origin) {
  if (cluster_id_ != 0 || id == 0) return;
  cluster_id_ = id;
  origin_ = origin;
}

std::string AdminTransport::NoNode() const {
  return cluster_id_ != 0 ? "no node of cluster " + std::to_string(cluster_id_)
                          : std::string("no node");
}

StatusOr<net::ResponseBody> AdminTransport::CallAnyCluster(const std::string& address,
                                                           net::RequestBody body,
                                                           std::chrono::milliseconds timeout,
                                                           bool* unreachable) {
  if (unreachable != nullptr) *unreachable = false;
  net::Request request;
  request.body = std::move(body);
  auto response = pool_->CallSync(address, std::move(request), timeout);
  if (!response.ok()) {
    if (unreachable != nullptr) *unreachable = Unreachable(response.status());
    // The pool's errors usually name the address already.
    if (response.status().message().find(address) != std::string::npos) return response.status();
    return response.status().WithContext(address);
  }
  if (!response->ok()) return response->status();
  return std::move(response->body);
}

StatusOr<ClusterMap> AdminTransport::MapOf(const std::string& address,
                                           std::chrono::milliseconds timeout, bool* unreachable) {
  auto body = CallAnyCluster(address, net::GetClusterMapRequest{}, timeout, unreachable);
  if (!body.ok()) return body.status();
  const auto* m = std::get_if<net::GetClusterMapResponse>(&*body);
  if (m == nullptr) return Status::Corruption(address + " sent an unexpected reply to a map fetch");
  auto map = ClusterMap::Decode(m->map);
  if (!map.ok()) return map.status().WithContext(address);
  return map;
}

StatusOr<net::ResponseBody> AdminTransport::Call(const std::string& address, net::RequestBody body,
                                                 std::chrono::milliseconds timeout,
                                                 CallFailure* failure) {
  CallFailure ignored;
  if (failure == nullptr) failure = &ignored;
  *failure = {};
  if (cluster_id_ == 0) {
    // Adopt the first answering node's cluster; every later request must reach that cluster.
    bool down = false;
    auto map = MapOf(address, timeout, &down);
    if (!map.ok() && map.status().code() == Status::Code::kUnauthenticated) return map.status();
    if (down) {
      failure->unreachable = true;
      return Status::Unavailable(address + " did not answer");
    }
    if (map.ok())
      Adopt(map->cluster_id(), "the cluster of " + address + " (the first node that answered)");
  }
  net::Request request;
  request.body = std::move(body);
  request.cluster_id = cluster_id_;
  auto response = pool_->CallSync(address, std::move(request), timeout);
  if (!response.ok()) {
    failure->unreachable = Unreachable(response.status());
    if (response.status().message().find(address) != std::string::npos) return response.status();
    return response.status().WithContext(address);
  }
  if (!response->ok()) {
    Status s = response->status();
    // A node of another cluster refuses the request (FailedPrecondition): confirm from its map
    // and say which two clusters are involved, whatever the node's own wording.
    if (s.code() == Status::Code::kFailedPrecondition && cluster_id_ != 0) {
      if (auto map = MapOf(address, timeout, nullptr);
          map.ok() && map->cluster_id() != cluster_id_) {
        failure->foreign = true;
        return Status::FailedPrecondition(address + " belongs to cluster " +
                                          std::to_string(map->cluster_id()) + ", not to cluster " +
                                          std::to_string(cluster_id_) +
                                          (origin_.empty() ? "" : " (" + origin_ + ")") +
                                          "; another cluster may have taken this cluster's ports");
      }
    }
    return s;
  }
  return std::move(response->body);
}

}  // namespace shardkv::admin
