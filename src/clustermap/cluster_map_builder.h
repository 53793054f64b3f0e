// The mutators of ClusterMap, internal to the library (the node, the rebalancer, the commit
// protocol and the tests): each returns a new map and changes nothing until it is installed by
// the commit protocol. Their contracts are documented at the declarations in
// include/shardkv/cluster_map.h.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "shardkv/cluster_map.h"

namespace shardkv::clustermap {

class ClusterMapBuilder {
 public:
  static ClusterMap WithEpoch(const ClusterMap& map, uint64_t epoch, uint32_t claimant) {
    return map.WithEpoch(epoch, claimant);
  }
  static StatusOr<ClusterMap> WithNodeUpdated(const ClusterMap& map, uint32_t id, NodeState state,
                                              std::string_view address) {
    return map.WithNodeUpdated(id, state, address);
  }
  static StatusOr<ClusterMap> WithNodeJoining(const ClusterMap& map, ClusterNode node) {
    return map.WithNodeJoining(std::move(node));
  }
  static StatusOr<ClusterMap> WithNodeLeaving(const ClusterMap& map, uint32_t id) {
    return map.WithNodeLeaving(id);
  }
  static StatusOr<ClusterMap> WithParamsChanging(const ClusterMap& map, uint32_t replicas,
                                                 uint32_t write_quorum, uint32_t read_quorum) {
    return map.WithParamsChanging(replicas, write_quorum, read_quorum);
  }
  static ClusterMap WithChange(const ClusterMap& map, ChangeRecord record) {
    return map.WithChange(std::move(record));
  }
  static StatusOr<ClusterMap> WithChangeCommitted(const ClusterMap& map) {
    return map.WithChangeCommitted();
  }
  static StatusOr<ClusterMap> WithChangeCancelled(const ClusterMap& map) {
    return map.WithChangeCancelled();
  }
};

inline ClusterMap WithEpoch(const ClusterMap& map, uint64_t epoch, uint32_t claimant) {
  return ClusterMapBuilder::WithEpoch(map, epoch, claimant);
}
inline StatusOr<ClusterMap> WithNodeUpdated(const ClusterMap& map, uint32_t id, NodeState state,
                                            std::string_view address = {}) {
  return ClusterMapBuilder::WithNodeUpdated(map, id, state, address);
}
inline StatusOr<ClusterMap> WithNodeJoining(const ClusterMap& map, ClusterNode node) {
  return ClusterMapBuilder::WithNodeJoining(map, std::move(node));
}
inline StatusOr<ClusterMap> WithNodeLeaving(const ClusterMap& map, uint32_t id) {
  return ClusterMapBuilder::WithNodeLeaving(map, id);
}
inline StatusOr<ClusterMap> WithParamsChanging(const ClusterMap& map, uint32_t replicas,
                                               uint32_t write_quorum, uint32_t read_quorum) {
  return ClusterMapBuilder::WithParamsChanging(map, replicas, write_quorum, read_quorum);
}
inline ClusterMap WithChange(const ClusterMap& map, ChangeRecord record) {
  return ClusterMapBuilder::WithChange(map, std::move(record));
}
inline StatusOr<ClusterMap> WithChangeCommitted(const ClusterMap& map) {
  return ClusterMapBuilder::WithChangeCommitted(map);
}
inline StatusOr<ClusterMap> WithChangeCancelled(const ClusterMap& map) {
  return ClusterMapBuilder::WithChangeCancelled(map);
}

// The change record of `map` (null: no map) as a value: NotFound when there is none. For the
// rebalancer's "is this still change X" checks, which read better on a StatusOr.
inline StatusOr<ChangeRecord> RecordOf(const ClusterMap* map) {
  if (map == nullptr || map->change() == nullptr) return Status::NotFound("no change record");
  return *map->change();
}
inline StatusOr<ChangeRecord> RecordOf(const ClusterMap& map) { return RecordOf(&map); }

}  // namespace shardkv::clustermap
