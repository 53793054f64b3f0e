// One in-process Node started on its own (standalone: a cluster of one, or a member by its
// options), and a client of one node, for tests that REQUIRE both to work.
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "shardkv/client.h"
#include "shardkv/node.h"

namespace shardkv::testing {

inline std::unique_ptr<Node> MustStart(const NodeOptions& options) {
  auto node = Node::Start(options);
  INFO(node.status().ToString());
  REQUIRE(node.ok());
  return std::move(node).value();
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
