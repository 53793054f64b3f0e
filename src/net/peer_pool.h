// PeerPool: one RpcClient per peer address over one shared IoContext, for node-to-node calls
// (replica writes and reads, hints, gossip, map fetches).
//
// Thread-safety: all methods are thread-safe. Callbacks run on the pool's I/O threads.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "net/io_context.h"
#include "net/rpc_client.h"

namespace shardkv::net {

class PeerPool {
 public:
  // A non-empty `auth_secret` authenticates every connection with it, a non-null `tls` makes
  // every connection TLS (RpcClientOptions).
  explicit PeerPool(int io_threads = 1, std::string auth_secret = "",
                    std::shared_ptr<const TlsContext> tls = nullptr);
  ~PeerPool();  // Close()s.
  PeerPool(const PeerPool&) = delete;
  PeerPool& operator=(const PeerPool&) = delete;

  void Call(const std::string& address, net::Request request, std::chrono::milliseconds timeout,
            net::RpcClient::Callback done);
  // REQUIRES: not on one of the pool's I/O threads.
  StatusOr<net::Response> CallSync(const std::string& address, net::Request request,
                                   std::chrono::milliseconds timeout);
  // Fails pending calls with Aborted; later calls fail at once. Idempotent.
  void Close();

 private:
  net::RpcClient* Get(const std::string& address);

  std::shared_ptr<net::IoContext> io_;
  const std::string auth_secret_;
  const std::shared_ptr<const TlsContext> tls_;
  common::Mutex mu_;
  std::map<std::string, std::unique_ptr<net::RpcClient>> clients_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace shardkv::net
