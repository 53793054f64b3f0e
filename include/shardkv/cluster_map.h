// ClusterMap: the versioned description of a cluster that every node persists and every client
// routes by (design.md "Cluster map and membership").
//
// A map holds the cluster id, a monotonically increasing epoch, the claimant that made it, the
// placement parameters (mode, vnodes, shards, RF/W/Q), the member nodes, the shard assignment in
// jump mode, and, during a membership change, the pending placement. It is an immutable value:
// changes build a new map (With*), and copies share the derived placement objects.
//
// Tokens: in ring mode a key's token is XXH3-64(key), its position on the ring. In jump mode it
// is (shard << 32) | low32(XXH3-64(key)) with shard = JumpHash(XXH3-64(key), S), so a shard is the
// contiguous token range [s << 32, (s+1) << 32). Either way a token is the prefix of the key's
// storage key, and a placement change moves whole token ranges.
//
// Two maps with the same epoch but different content are a conflict: compare ContentHash().
//
// Membership changes (design.md "Rebalancing: the transition protocol"): a map may carry a pending
// placement next to the current one, and the change's stage. nodes() lists every member of either
// placement: a kJoining node is only in the pending placement, a kLeaving node only in the current
// one. The stage decides the read and write sets:
//   kJointWrites (e+1): reads use O (current), writes go to O and N (pending), W acks in each;
//   kReadNew     (e+2): reads use N, writes still joint;
//   kNewOnly     (e+3): reads and writes use N; old replicas may drop what they lost once the
//                       change is committed (current := pending) at the next epoch.
//
// The public view is read-only: an application reads maps (from Client::map() or Admin) and forms
// a cluster with Admin::FormCluster; the mutators (With*) are internal to the library.
//
// Thread-safety: immutable; safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/change.h"
#include "shardkv/status.h"

namespace shardkv {

class HashRing;
class ShardMap;
namespace clustermap {
class ClusterMapBuilder;
struct ClusterMapCodec;
}  // namespace clustermap

enum class PlacementMode : uint8_t { kRing, kJump };
enum class NodeState : uint8_t { kUp, kJoining, kLeaving, kDown };

std::string_view PlacementModeName(PlacementMode mode);
StatusOr<PlacementMode> ParsePlacementMode(std::string_view name);
std::string_view NodeStateName(NodeState state);

struct ClusterNode {
  uint32_t id = 0;
  std::string address;  // host:port
  double weight = 1.0;
  NodeState state = NodeState::kUp;
  friend bool operator==(const ClusterNode&, const ClusterNode&) = default;
};

struct ClusterParams {
  PlacementMode mode = PlacementMode::kRing;
  uint32_t vnodes = 160;
  uint32_t shards = 1024;
  uint32_t replication_factor = 3;
  uint32_t write_quorum = 2;
  uint32_t read_quorum = 2;
  friend bool operator==(const ClusterParams&, const ClusterParams&) = default;
};

// Size limits of a new cluster (ClusterMap::Create refuses more; the CLI validates with them).
// Both are what an add-node completes with, end to end, within a minute on a 2-core machine:
// - Jump mode: the shard map's rebalancing (ShardMap::WithNodeAdded/Removed) grows about with
//   the square of the shard count: 16,384 shards take ~6 s per join, 65,536 took 164 s.
// - Ring mode: placement and plan are O(V log V); 100,000 vnodes per node plan in ~1.5 s and
//   a change of their ~225,000 ranges streams in a few dozen grouped tasks.
inline constexpr uint32_t kMaxShards = 16384;
inline constexpr uint32_t kMaxVnodes = 100000;

// The placement name of a node: vnode labels and shard-map entries use it, so it must never
// change for the life of the node. Derived from the id alone.
std::string PlacementName(uint32_t node_id);

class ClusterMap {
 public:
  static constexpr uint32_t kFormatVersion = 1;

  // A new cluster at epoch 1. Errors: no nodes, duplicate ids or addresses, weight <= 0,
  // quorums of 0 or above RF, RF of 0, vnodes or shards of 0.
  static StatusOr<ClusterMap> Create(uint64_t cluster_id, ClusterParams params,
                                     std::vector<ClusterNode> nodes, uint32_t claimant);
  // Parses an encoded map; Corruption on bad bytes, FailedPrecondition on an unknown version.
  static StatusOr<ClusterMap> Decode(std::string_view bytes);
  std::string Encode() const;
  // XXH3 of the encoding: equal epochs with different hashes are a conflict.
  uint64_t ContentHash() const;

  uint64_t cluster_id() const;
  uint64_t epoch() const;
  uint32_t claimant() const;
  const ClusterParams& params() const;
  const std::vector<ClusterNode>& nodes() const;
  // nullptr if absent.
  const ClusterNode* FindNode(uint32_t id) const;
  const ClusterNode* FindNodeByAddress(std::string_view address) const;
  // RF capped by the node count; W and Q capped by that.
  uint32_t EffectiveReplicas() const;
  uint32_t EffectiveWriteQuorum() const;
  uint32_t EffectiveReadQuorum() const;
  // The quorums (configured, the caller caps them by the set's size) an operation uses at this
  // stage: a read, of ReadReplicas(); a write, of WriteReplicas()'s old_set or (new_set) its
  // new_set. They differ from params() only during a params change: from kReadNew on a read uses
  // the pending Q, and a write the pending W for N (which is old_set from kNewOnly on).
  uint32_t ReadQuorum() const;
  uint32_t WriteQuorum(bool new_set) const;

  uint64_t TokenOf(std::string_view key) const;
  // Node ids holding `token` under the current placement, primary first, EffectiveReplicas()
  // of them.
  std::vector<uint32_t> Replicas(uint64_t token) const;

  // ---- Membership change ----
  bool has_pending() const;
  // The record of the pending change, or of the last one once it ended (kept so that every node
  // can report how it ended); nullptr when the cluster never had a change. Its state is the one
  // stage enum of a change (change.h): while has_pending(), it also sets how the placements are
  // used: kReadNew reads from N; kNewOnly and kCleanup read and write N only; any other state
  // writes to O and N and reads from O (joint writes).
  const ChangeRecord* change() const;
  // Under the pending placement (empty without one), primary first.
  std::vector<uint32_t> PendingReplicas(uint64_t token) const;
  uint32_t PendingEffectiveReplicas() const;
  // The pending placement's parameters: params() except during a params change (ChangeKind::
  // kParams), whose new RF and quorums they hold until it is committed.
  const ClusterParams& pending_params() const;
  uint32_t PendingEffectiveWriteQuorum() const;
  uint32_t PendingEffectiveReadQuorum() const;
  // The replicas a read uses at this stage (O before kReadNew, N from it on).
  std::vector<uint32_t> ReadReplicas(uint64_t token) const;
  // The write sets at this stage: `old_set` always; `new_set` non-empty only while writes are
  // joint (before kNewOnly). At kNewOnly `old_set` is N.
  void WriteReplicas(uint64_t token, std::vector<uint32_t>* old_set,
                     std::vector<uint32_t>* new_set) const;
  // True if `node` holds or is pending for `token` (the fencing rule).
  bool Holds(uint32_t node, uint64_t token) const;

  // The placement objects (exactly one is non-null, per mode).
  const HashRing* ring() const;
  const ShardMap* shard_map() const;
  // The pending placement's (null without one).
  const HashRing* pending_ring() const;
  const ShardMap* pending_shard_map() const;

  std::string DebugString() const;

 private:
  // The mutators: a cluster's map changes only by the commit protocol, so they are internal.
  // src/clustermap/cluster_map_builder.h gives the node, the rebalancer and the tests free
  // functions over them; an application reads maps and never builds a successor.
  friend class clustermap::ClusterMapBuilder;
  // A copy with a new epoch and claimant (the content otherwise unchanged).
  ClusterMap WithEpoch(uint64_t epoch, uint32_t claimant) const;
  // A copy whose node `id` has `state` (and, if non-empty, `address`). NotFound if absent.
  StatusOr<ClusterMap> WithNodeUpdated(uint32_t id, NodeState state,
                                       std::string_view address = {}) const;

  // Starts a change (joint writes) that adds `node` (state set to kJoining). The pending
  // ring is rebuilt with the node; in jump mode the shard map moves the minimum of replicas to
  // it. FailedPrecondition if a change is already pending; InvalidArgument for a duplicate id or
  // address or a bad weight.
  StatusOr<ClusterMap> WithNodeJoining(ClusterNode node) const;
  // Starts a change that removes node `id` (state kLeaving). NotFound if absent;
  // FailedPrecondition if a change is pending or it is the last node.
  StatusOr<ClusterMap> WithNodeLeaving(uint32_t id) const;
  // Starts a params change (ChangeKind::kParams): the pending placement is the same members with
  // these RF and quorums (in jump mode each shard row shrinks or grows by the fewest replicas).
  // FailedPrecondition if a change is pending; InvalidArgument for quorums outside 1..RF, an RF
  // of 0, or values equal to the current ones.
  StatusOr<ClusterMap> WithParamsChanging(uint32_t replicas, uint32_t write_quorum,
                                          uint32_t read_quorum) const;
  // A copy whose change record is `record` (its state is the stage of a pending change).
  ClusterMap WithChange(ChangeRecord record) const;
  // Ends the change: the pending placement becomes current (joining nodes up, leaving nodes
  // gone). FailedPrecondition without a pending change.
  StatusOr<ClusterMap> WithChangeCommitted() const;
  // Drops the pending placement (joining nodes gone, leaving nodes up again).
  StatusOr<ClusterMap> WithChangeCancelled() const;

  struct Rep;
  explicit ClusterMap(std::shared_ptr<const Rep> rep) : rep_(std::move(rep)) {}
  static StatusOr<ClusterMap> Build(std::shared_ptr<Rep> rep);
  friend struct clustermap::ClusterMapCodec;

  std::shared_ptr<const Rep> rep_;
};

}  // namespace shardkv
