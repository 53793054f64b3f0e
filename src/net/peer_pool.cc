#include "net/peer_pool.h"

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
  std::map<std::string, std::unique_ptr<net::RpcClient>> clients;
  {
    common::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    clients.swap(clients_);
  }
  for (auto& [address, rpc] : clients) rpc->Close();
  clients.clear();
  io_->Stop();
}

}  // namespace shardkv::net
