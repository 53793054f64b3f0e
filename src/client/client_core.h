// Client::Core: the routing and retry engine behind shardkv::Client.
//
// It keeps the current cluster map (replaced whole when a newer one arrives), one RpcClient per
// node address over a shared IoContext, and the newest HLC timestamp seen. Send() routes a
// request by token, fills in the request header, and retries transient failures on the next
// replica, at most max_retries times and never past the deadline. It talks to one cluster only
// (ClientOptions::cluster_id): a map or a refusal from a node of another cluster makes that node
// a suspect to skip, and the caller gets an error naming both cluster ids.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "net/io_context.h"
#include "net/messages.h"
#include "net/rpc_client.h"
#include "net/tls_context.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"

namespace shardkv {

// The op's result, or the error the response carries (naming the node).
template <typename Body>
StatusOr<Body*> Expect(StatusOr<net::Response>& reply) {
  if (!reply.ok()) return reply.status();
  if (Status s = reply->status(); !s.ok()) return s;
  Body* body = std::get_if<Body>(&reply->body);
  if (body == nullptr) return Status::Corruption("unexpected response type");
  return body;
}

class Client::Core : public std::enable_shared_from_this<Client::Core> {
 public:
  using Clock = std::chrono::steady_clock;
  using ResponseCallback = std::function<void(StatusOr<net::Response>)>;

  // `security`: the secret and TLS context of `options`, loaded by Client::Connect.
  Core(ClientOptions options, net::ClientSecurity security);
  ~Core();

  // Fetches the map from the seeds (or, once known, from the map's nodes).
  Status RefreshMap();

  // Sends `request` to the coordinator of `token` (or to `address` when given), retrying
  // transient errors. `done` gets the final response (which may carry a server error) or the
  // last transport error. Runs `done` on a network thread, or on the caller's on early failure.
  void Send(net::Request request, std::optional<uint64_t> token, std::string address,
            ResponseCallback done);

  std::shared_ptr<const ClusterMap> map() const;
  uint64_t cluster_id() const { return cluster_id_.load(); }
  uint64_t max_seen_ts() const { return max_seen_ts_.load(std::memory_order_relaxed); }
  const ClientOptions& options() const { return options_; }
  net::Consistency WireConsistency(Consistency c) const;
  void Close();

 private:
  struct Attempt;

  void Dispatch(std::shared_ptr<Attempt> attempt);
  void OnReply(std::shared_ptr<Attempt> attempt, StatusOr<net::Response> reply);
  net::RpcClient* Rpc(const std::string& address);
  void ObserveTimestamp(uint64_t ts);
  bool Suspect(const std::string& address);
  void MarkSuspect(const std::string& address);
  void OfferMap(const std::string& encoded);
  // True if a map of cluster `id` from `address` may be used: `id` is the expected cluster, or
  // no id is expected yet and this one is adopted. Otherwise remembers `address` as foreign.
  bool AcceptCluster(const std::string& address, uint64_t id);
  // The error for `address` answering for cluster `theirs`: names both ids (Unavailable, since
  // the cluster the caller wants is not what answers there).
  Status WrongCluster(const std::string& address, uint64_t theirs) const;

  const ClientOptions options_;
  const std::string auth_secret_;
  const std::shared_ptr<const net::TlsContext> tls_;
  std::shared_ptr<net::IoContext> io_;

  mutable common::Mutex mu_;
  std::shared_ptr<const ClusterMap> map_ GUARDED_BY(mu_);
  std::map<std::string, std::unique_ptr<net::RpcClient>> rpcs_ GUARDED_BY(mu_);
  // Nodes that just failed to answer are tried last for a short while, so one dead or paused
  // node does not cost every request a timeout.
  std::map<std::string, Clock::time_point> suspect_until_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  // Where an adopted cluster id came from (ClientOptions::cluster_id was 0), for errors.
  std::string adopted_from_ GUARDED_BY(mu_);

  // The cluster this client talks to: ClientOptions::cluster_id, or the first one adopted.
  std::atomic<uint64_t> cluster_id_{0};

  std::atomic<uint64_t> max_seen_ts_{0};
};

}  // namespace shardkv
