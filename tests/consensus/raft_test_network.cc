#include "consensus/raft_test_network.h"

namespace shardkv::consensus::testing {

void TestNetwork::Endpoint::Send(uint64_t to, const std::string&, std::string message) {
  RaftReplica* target = nullptr;
  {
    std::lock_guard<std::mutex> lock(net_->mu_);
    if (net_->cut_.count({id_, to}) == 0) {
      auto it = net_->replicas_.find(to);
      if (it != net_->replicas_.end()) target = it->second;
    }
    if (target == nullptr) ++net_->dropped_;
    // Receive only posts to the target's loop: it is safe under the lock, and holding it keeps
    // Attach(id, nullptr) from racing a delivery to a replica being destroyed.
    if (target != nullptr) target->Receive(std::move(message));
  }
}

TestNetwork::Endpoint* TestNetwork::EndpointFor(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& e = endpoints_[id];
  if (!e) e = std::make_unique<Endpoint>(this, id);
  return e.get();
}

void TestNetwork::Attach(uint64_t id, RaftReplica* replica) {
  std::lock_guard<std::mutex> lock(mu_);
  if (replica == nullptr) {
    replicas_.erase(id);
  } else {
    replicas_[id] = replica;
  }
}

void TestNetwork::Cut(uint64_t a, uint64_t b) {
  std::lock_guard<std::mutex> lock(mu_);
  cut_.insert({a, b});
  cut_.insert({b, a});
}

void TestNetwork::Heal(uint64_t a, uint64_t b) {
  std::lock_guard<std::mutex> lock(mu_);
  cut_.erase({a, b});
  cut_.erase({b, a});
}

void TestNetwork::Isolate(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [other, r] : replicas_) {
    if (other == id) continue;
    cut_.insert({id, other});
    cut_.insert({other, id});
  }
  for (const auto& [other, e] : endpoints_) {
    if (other == id) continue;
    cut_.insert({id, other});
    cut_.insert({other, id});
  }
}

void TestNetwork::HealAll() {
  std::lock_guard<std::mutex> lock(mu_);
  cut_.clear();
}

uint64_t TestNetwork::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

}  // namespace shardkv::consensus::testing
