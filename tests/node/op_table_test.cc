// KvService's operation table (src/node/kv_service_ops.cc, design.md "Operation table"): a
// row per net::RequestBody alternative (a missing row or handler fails the build: the table's
// static_assert), stats names that stay what dashboards read, and the guards each kind of op
// gets.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "node/kv_service.h"

using namespace shardkv;
using node::KvService;

namespace {

// The stats names (ops_<name>) in the variant's order: metrics and dashboards read them, so a
// rename is a change of the metrics contract, not a refactoring.
const std::vector<std::string> kNames = {"ping",
                                         "get",
                                         "put",
                                         "delete",
                                         "multi_get",
                                         "multi_put",
                                         "stats",
                                         "get_cluster_map",
                                         "replica_write",
                                         "replica_read",
                                         "install_map",
                                         "stream_scan",
                                         "stream_range",
                                         "count_ranges",
                                         "admin",
                                         "expire",
                                         "scan",
                                         "replica_scan",
                                         "raft_message",
                                         "anti_entropy",
                                         "replica_write_batch",
                                         "incr",
                                         "hash_write",
                                         "hash_read",
                                         "set_write",
                                         "set_read"};

size_t OpIndex(const std::string& name) {
  for (size_t op = 0; op < KvService::kOpCount; ++op) {
    if (KvService::OpName(op) == name) return op;
  }
  FAIL("no op named " << name);
  return 0;
}

bool Has(const std::string& name, uint32_t guard) {
  return (KvService::OpGuards(OpIndex(name)) & guard) != 0;
}

}  // namespace

TEST_CASE("op table: one row per request op, named by its stats name", "[node][optable]") {
  REQUIRE(KvService::kOpCount == kNames.size());
  std::set<std::string> seen;
  for (size_t op = 0; op < KvService::kOpCount; ++op) {
    INFO("op " << op);
    CHECK(std::string(KvService::OpName(op)) == kNames[op]);
    CHECK(seen.insert(std::string(KvService::OpName(op))).second);
  }
  CHECK(KvService::OpName(KvService::kOpCount).empty());
}

TEST_CASE("op table: the guards of each kind of op", "[node][optable]") {
  const uint32_t client = node::kGuardReady | node::kGuardClusterId | node::kGuardFence |
                          node::kGuardSendOn | node::kGuardDeadline | node::kGuardClock |
                          node::kGuardEpoch | node::kOpClient;
  for (const char* op : {"get", "multi_get", "scan"}) {
    INFO(op);
    CHECK(KvService::OpGuards(OpIndex(op)) == client);
  }
  for (const char* op : {"put", "delete", "multi_put", "expire", "incr"}) {
    INFO(op);
    CHECK(KvService::OpGuards(OpIndex(op)) == (client | node::kGuardStorage));
  }
  // Every op checks the cluster id; only client ops are fenced, sent on or deadline-dropped.
  for (size_t op = 0; op < KvService::kOpCount; ++op) {
    INFO(KvService::OpName(op));
    const uint32_t g = KvService::OpGuards(op);
    CHECK((g & node::kGuardClusterId) != 0);
    const bool is_client = (g & node::kOpClient) != 0;
    CHECK(((g & node::kGuardFence) != 0) == is_client);
    CHECK(((g & node::kGuardSendOn) != 0) == is_client);
    CHECK(((g & node::kGuardDeadline) != 0) == is_client);
  }
  // Info ops answer a starting node, whatever its clock or epoch.
  for (const char* op : {"ping", "stats", "get_cluster_map", "raft_message"}) {
    INFO(op);
    CHECK(KvService::OpGuards(OpIndex(op)) == node::kGuardClusterId);
  }
  // A map install or an admin command is never held for a newer map (it may bring it).
  CHECK_FALSE(Has("install_map", node::kGuardEpoch));
  CHECK_FALSE(Has("admin", node::kGuardEpoch));
  CHECK(Has("replica_read", node::kGuardEpoch));
  CHECK(Has("replica_write", node::kGuardReplicaDeadline));
  CHECK(Has("replica_write_batch", node::kGuardReplicaDeadline));
  CHECK_FALSE(Has("replica_read", node::kGuardReplicaDeadline));
}

TEST_CASE("op table: what a node without a map serves", "[node][optable]") {
  for (size_t op = 0; op < KvService::kOpCount; ++op) {
    const std::string name(KvService::OpName(op));
    INFO(name);
    node::Unformed expected = node::Unformed::kRefuse;
    if (name == "ping" || name == "stats") expected = node::Unformed::kServe;
    if (name == "get_cluster_map") expected = node::Unformed::kNoMap;
    if (name == "install_map") expected = node::Unformed::kAdoptOnly;
    CHECK(KvService::OpUnformed(op) == expected);
  }
}
