# The cluster map as persisted in every node's `meta` column family and sent over the wire.
# Field ordinals are the compatibility contract: only ever add fields.
@0xb7d1c3a4e5f60718;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shardkv::mapwire");

enum PlacementMode {
  ring @0;
  jump @1;
}

enum NodeState {
  up @0;
  joining @1;
  leaving @2;
  down @3;
}

struct NodeEntry {
  id @0 :UInt32;
  address @1 :Text;
  weight @2 :Float64;
  state @3 :NodeState;
}

# One shard's replica set (jump mode), as node ids, primary first.
struct ShardRow {
  nodes @0 :List(UInt32);
}

struct Placement {
  nodes @0 :List(NodeEntry);
  shards @1 :List(ShardRow);  # jump mode only
}

struct ClusterMap {
  formatVersion @0 :UInt32;
  clusterId @1 :UInt64;
  epoch @2 :UInt64;
  claimant @3 :UInt32;
  mode @4 :PlacementMode;
  vnodes @5 :UInt32;
  shardCount @6 :UInt32;
  replicationFactor @7 :UInt32;
  writeQuorum @8 :UInt32;
  readQuorum @9 :UInt32;
  current @10 :Placement;
  # A membership change in progress (the rebalancer's transition), or absent.
  hasPending @11 :Bool;
  pending @12 :Placement;
  # 0.1.0's stage number (0 none, 1 joint writes, 2 read new, 3 new only). Still written, from
  # the record's state, but never read: the record's state is the one stage (change.h).
  pendingStage @13 :UInt8;
  # The change record (ChangeRecord::Encode: a change.capnp message, or 0.1.0's key=value text,
  # read only), of the pending change or of the last one after it ended. Empty: never a change.
  pendingDetail @14 :Data;
  # A params change (shardkv cluster set): the pending placement's replication factor and
  # quorums; 0 = the same as the current ones. A map with them set carries a version-2 change
  # record, which an older reader refuses, so it never builds the pending placement without them.
  pendingReplicationFactor @15 :UInt32;
  pendingWriteQuorum @16 :UInt32;
  pendingReadQuorum @17 :UInt32;
}
