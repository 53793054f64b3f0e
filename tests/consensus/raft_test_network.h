// An in-process network of RaftReplicas for tests: every message goes through Send, which drops
// it if the link between the two servers is cut (a partition), and otherwise hands it to the
// receiver's Receive.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "consensus/raft_replica.h"

namespace shardkv::consensus::testing {

class TestNetwork {
 public:
  class Endpoint : public RaftTransport {
   public:
    Endpoint(TestNetwork* net, uint64_t id) : net_(net), id_(id) {}
    void Send(uint64_t to, const std::string& address, std::string message) override;

   private:
    TestNetwork* net_;
    uint64_t id_;
  };

  Endpoint* EndpointFor(uint64_t id);
  // The replica that receives messages for `id` (null: messages to it are dropped).
  void Attach(uint64_t id, RaftReplica* replica);
  // Cuts (or restores) both directions between a and b.
  void Cut(uint64_t a, uint64_t b);
  void Heal(uint64_t a, uint64_t b);
  // Cuts `id` from every other server; HealAll restores every link.
  void Isolate(uint64_t id);
  void HealAll();
  uint64_t dropped() const;

 private:
  mutable std::mutex mu_;
  std::map<uint64_t, RaftReplica*> replicas_;
  std::map<uint64_t, std::unique_ptr<Endpoint>> endpoints_;
  std::set<std::pair<uint64_t, uint64_t>> cut_;
  uint64_t dropped_ = 0;
};

}  // namespace shardkv::consensus::testing
