// ClusterView: what the Redis front end needs to know about the cluster beyond one key: the
// current map, and each member's stats (its Redis address for the emulated CLUSTER SLOTS, its
// live-key count for DBSIZE). An interface so the command layer's tests run without a cluster.
//
// Thread-safety: implementations are thread-safe; `done` may run on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shardkv/cluster_map.h"

namespace shardkv::redis {

struct NodeView {
  uint32_t id = 0;
  std::string address;        // the native address (the cluster map's)
  std::string redis_address;  // host:port of its Redis listener; empty: none, or no answer
  std::map<std::string, int64_t> counters;  // its stats counters (empty: no answer)
};

class ClusterView {
 public:
  virtual ~ClusterView() = default;
  // The node's current cluster map; nullptr while unformed.
  virtual std::shared_ptr<const ClusterMap> Map() const = 0;
  // The stats of every member that is not down, this node's included, in id order; members
  // that do not answer in time are left out. May answer from a cache a second old.
  virtual void Fetch(std::function<void(std::vector<NodeView>)> done) = 0;
};

}  // namespace shardkv::redis
