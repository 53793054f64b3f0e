// One in-process Node started on its own, and a client of one node, for tests that REQUIRE both
// to work. A fresh node is unformed (design.md "Unformed nodes"): MustStart returns it as it is,
// MustStartFormed also forms it into a cluster of one (RF=W=Q=1), the usable single node that a
// fresh node used to be by itself.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "shardkv/node.h"

namespace shardkv::testing {

inline std::unique_ptr<Node> MustStart(const NodeOptions& options) {
  auto node = Node::Start(options);
  INFO(node.status().ToString());
  REQUIRE(node.ok());
  return std::move(node).value();
}

// Forms the running, unformed `node` into a cluster of one (Admin::FormCluster, RF=W=Q=1) with
// `cluster_id` (0: a random one). Returns the map.
inline ClusterMap MustFormAlone(const Node& node, uint64_t cluster_id = 0) {
  AdminOptions ao;
  ao.seeds = {node.address()};
  auto admin = Admin::Create(ao);
  INFO(admin.status().ToString());
  REQUIRE(admin.ok());
  ClusterParams params;
  params.replication_factor = params.write_quorum = params.read_quorum = 1;
  auto formed =
      (*admin)->FormCluster({{node.id(), node.address(), 1.0, NodeState::kUp}}, params, cluster_id);
  INFO(formed.status().ToString());
  REQUIRE(formed.ok());
  return *std::move(formed);
}

inline std::unique_ptr<Node> MustStartFormed(const NodeOptions& options, uint64_t cluster_id = 0) {
  auto node = MustStart(options);
  MustFormAlone(*node, cluster_id);
  return node;
}

inline std::unique_ptr<Client> MustConnect(const std::string& address, uint32_t timeout_ms = 5000) {
  ClientOptions o;
  o.seeds = {address};
  o.timeout_ms = timeout_ms;
  auto c = Client::Connect(o);
  INFO(c.status().ToString());
  REQUIRE(c.ok());
  return std::move(c).value();
}

}  // namespace shardkv::testing
