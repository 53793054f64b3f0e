#include "net/peer_pool.h"

#include <vector>

namespace shardkv::net {

PeerPool::PeerPool(int io_threads, std::string auth_secret, std::shared_ptr<const TlsContext> tls)
    : io_(std::make_shared<net::IoContext>(std::max(1, io_threads), "shardkv-peer")),
      auth_secret_(std::move(auth_secret)),
      tls_(std::move(tls)) {}

PeerPool::~PeerPool() { Close(); }

net::RpcClient* PeerPool::Get(const std::string& address) {
  common::MutexLock lock(&mu_);
  if (closed_) return nullptr;
  auto it = clients_.find(address);
  if (it == clients_.end()) {
    net::RpcClientOptions o;
    o.connect_timeout = std::chrono::milliseconds(1000);
    o.auth_secret = auth_secret_;
    o.tls = tls_;
    it = clients_.emplace(address, std::make_unique<net::RpcClient>(address, o, io_)).first;
  }
  return it->second.get();
}

void PeerPool::Call(const std::string& address, net::Request request,
                    std::chrono::milliseconds timeout, net::RpcClient::Callback done) {
  net::RpcClient* rpc = Get(address);
  if (rpc == nullptr) return done(Status::Aborted(address + ": node is shutting down"));
  rpc->Call(std::move(request), timeout, std::move(done));
}

StatusOr<net::Response> PeerPool::CallSync(const std::string& address, net::Request request,
                                           std::chrono::milliseconds timeout) {
  net::RpcClient* rpc = Get(address);
  if (rpc == nullptr) return Status::Aborted(address + ": node is shutting down");
  return rpc->CallSync(std::move(request), timeout);
}

void PeerPool::Close() {
  std::vector<net::RpcClient*> clients;
  {
    common::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    for (auto& [address, rpc] : clients_) clients.push_back(rpc.get());
  }
  // Closed, not freed: a thread that took a client from Get() before the close may still call
  // it, and the call then fails at once ("client closed"). Freeing them here was a
  // use-after-free (ASan: a background repair step in RpcClient::Call during a node's stop).
  // The destructor frees them, after the I/O threads stopped.
  for (net::RpcClient* rpc : clients) rpc->Close();
  io_->Stop();
}

}  // namespace shardkv::net
