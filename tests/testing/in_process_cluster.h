// InProcessCluster: N real Nodes in this process on 127.0.0.1 port 0, each in its own temp
// directory, formed into one cluster through Admin::FormCluster, as `shardkv cluster up` does.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/messages.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/node.h"
#include "testing/temp_dir.h"

namespace shardkv::testing {

// The cluster id Start() forms with, unless the constructor is given another.
inline constexpr uint64_t kInProcessClusterId = 0xC0FFEE;

class InProcessCluster {
 public:
  InProcessCluster(int nodes, ClusterParams params, uint64_t tombstone_grace_ms = 0,
                   uint64_t cluster_id = kInProcessClusterId);
  ~InProcessCluster();

  // Called on each node's options before it starts (and restarts): per-node settings such as
  // one node's max_clock_offset_ms. Set it before Start().
  void TuneNodes(std::function<void(uint32_t id, NodeOptions*)> tune) { tune_ = std::move(tune); }
  // Starts every node (unformed) and forms the cluster (Admin::FormCluster). Returns the first
  // error.
  Status Start();
  // Stops node `id` (1-based) gracefully; its data stays.
  void StopNode(uint32_t id);
  // Restarts a stopped node on the same data and the same port.
  Status RestartNode(uint32_t id);
  // Starts one more node (id = size() + 1), unformed, for a scale-out. Returns its id.
  StatusOr<uint32_t> AddStandaloneNode();
  uint32_t size() const { return static_cast<uint32_t>(nodes_.size()); }
  bool running(uint32_t id) const { return nodes_[id - 1] != nullptr; }
  Node* node(uint32_t id) const { return nodes_[id - 1].get(); }

  std::vector<std::string> Addresses() const;
  std::string Address(uint32_t id) const { return addresses_[id - 1]; }
  StatusOr<std::unique_ptr<Client>> Connect(ClientOptions options = {}) const;
  // Sends one request straight to node `id`: only for what a test reads of one node's own state
  // (a replica read, a range count) or a request it sends on purpose; changes go through Admin.
  StatusOr<net::Response> Call(uint32_t id, net::Request request) const;
  // The version node `id` holds locally for `key` (NotFound if none), via replicaRead.
  StatusOr<net::ReplicaReadResponse> LocalRead(uint32_t id, const std::string& key) const;
  // The map Start() formed (epoch 1); the cluster's newest map is AdminFor(c)->NewestMap().
  const ClusterMap& map() const { return *map_; }
  uint64_t cluster_id() const { return cluster_id_; }
  // Node `id`'s data directory (its RocksDB database is DataDir(id) + "/db"): a test that damages
  // a stopped node's data opens it directly.
  std::string DataDir(uint32_t id) const { return dir_.Sub("node-" + std::to_string(id)); }

 private:
  NodeOptions OptionsFor(uint32_t id, uint16_t port) const;

  int n_;
  ClusterParams params_;
  uint64_t grace_ms_;
  uint64_t cluster_id_;
  TempDir dir_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::string> addresses_;
  std::unique_ptr<ClusterMap> map_;
  std::function<void(uint32_t, NodeOptions*)> tune_;
};

// An Admin of every node of `c` (the standalone ones too: as nodes of another cluster they are
// not asked), expecting the cluster's id. See testing/cluster_util.h for waiting on a change.
std::unique_ptr<Admin> AdminFor(const InProcessCluster& c);

}  // namespace shardkv::testing
