// Helpers shared by the in-process rebalancer tests: admin calls, waiting for a change to end,
// loading keys, and reading a node's map.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "net/rpc_client.h"
#include "clustermap/change_record.h"
#include "testing/in_process_cluster.h"

namespace shardkv::rebalance_test {

// `timeout`: a plan or begin counts every key (InProcessCluster::Call waits 10 s).
inline StatusOr<rebalance::RebalanceReport> Admin(
    const testing::InProcessCluster& c, uint32_t id, const std::string& cmd,
    std::map<std::string, std::string> args = {},
    std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  net::Request req;
  req.body = net::AdminRequest{cmd, std::move(args)};
  net::RpcClient rpc(c.Address(id));
  auto reply = rpc.CallSync(std::move(req), timeout);
  if (!reply.ok()) return reply.status();
  if (!reply->ok()) return reply->status();
  const auto* body = std::get_if<net::AdminResponse>(&reply->body);
  if (body == nullptr) return Status::Corruption("not an admin reply");
  return rebalance::RebalanceReport::Decode(body->payload);
}

inline StatusOr<ClusterMap> MapOf(const testing::InProcessCluster& c, uint32_t id) {
  net::Request req;
  req.body = net::GetClusterMapRequest{};
  auto reply = c.Call(id, std::move(req));
  if (!reply.ok()) return reply.status();
  const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
  if (body == nullptr) return Status::Corruption("no map");
  return ClusterMap::Decode(body->map);
}

// Polls `status` on node `id` until `until` holds for the report or `limit` passes.
template <typename Pred>
rebalance::RebalanceReport WaitFor(const testing::InProcessCluster& c, uint32_t id, Pred until,
                                   std::chrono::seconds limit = std::chrono::seconds(90)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  rebalance::RebalanceReport last;
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = Admin(c, id, "status");
    if (r.ok()) {
      last = *r;
      if (until(last)) return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  FAIL("condition not reached; last state " +
       std::string(rebalance::ChangeStateName(last.record.state)) + " error " + last.record.error);
  return last;
}

inline bool Ended(const rebalance::RebalanceReport& r) {
  const auto s = r.record.state;
  return s == rebalance::ChangeState::kDone || s == rebalance::ChangeState::kFailed ||
         s == rebalance::ChangeState::kCancelled;
}

// n keys "k<i>" with values of `value_bytes`.
inline void Load(const testing::InProcessCluster& c, int n, size_t value_bytes = 8) {
  auto client = c.Connect();
  REQUIRE(client.ok());
  std::vector<std::pair<std::string, std::string>> part;
  for (int i = 0; i < n; ++i) {
    part.emplace_back("k" + std::to_string(i), std::string(value_bytes, 'a' + i % 26));
    if (part.size() == 500 || i + 1 == n) {
      for (const auto& s : (*client)->MultiPut(part)) REQUIRE(s.ok());
      part.clear();
    }
  }
}

}  // namespace shardkv::rebalance_test
