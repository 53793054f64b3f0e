# Anti-entropy (design.md "Anti-entropy"): the wire structs of `shardkv repair`, kept out of
# shardkv.capnp, which carries them in one Request member and one Response member
# (`antiEntropy`). Same evolution rules as shardkv.capnp.
#
#   tree    TreeQuery -> List(TreeNode), one per span asked, same order
#   apply   List(RepairEntry) -> ApplyCounts (the replica's LWW batch apply)
#   repair  RepairCommand -> RepairReport (admin to the node that compares the ranges)
# A replica's leaf entries travel by the rebalancer's streamScan (ranges = the leaf spans).

@0xd1a4c3b2e5f60718;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shardkv::net::wire");

struct AeSpan {
  first @0 :UInt64;
  last @1 :UInt64;
}

# The hashes of `spans` in the replica's tree of [first, last], built on the first query of
# `session` by a scan and kept for the session's later queries (released when idle, or by
# `release`: then no spans are answered). A release with `repairedMs` says the range was repaired
# against every one of `replicas`: the replica's tombstone GC horizon (design.md "Tombstones and
# GC"); a node of an earlier release ignores it, and keeps collecting by the grace alone.
struct TreeQuery {
  session @0 :UInt64;
  first @1 :UInt64;
  last @2 :UInt64;
  spans @3 :List(AeSpan);
  release @4 :Bool;
  repairedMs @5 :UInt64;
  replicas @6 :List(UInt32);
}

struct TreeNode {
  hash @0 :UInt64;   # XOR of the span's entry hashes (storage/range_hash_tree.h)
  count @1 :UInt64;  # keys in the span
}

# One record pushed to a replica (the same fields as a StreamEntry).
struct RepairEntry {
  token @0 :UInt64;
  key @1 :Data;
  ts @2 :UInt64;
  nodeId @3 :UInt32;
  tombstone @4 :Bool;
  value @5 :Data;
  expExplicit @6 :Bool;
  expValueAbsent @7 :Bool;
  expTs @8 :UInt64;
  expNodeId @9 :UInt32;
  expiresAtMs @10 :UInt64;
  counter @11 :List(CounterEntry);
  hash @12 :List(HashField);
  set @13 :List(SetMember);
}

# One node's entry of a set member (src/storage/value_envelope.h SetMember); shardkv.capnp's
# ExpiryRegister carries a list of them too.
struct SetMember {
  name @0 :Data;
  actor @1 :UInt32;
  add @2 :UInt64;
  removed @3 :UInt64;
  removedAt @4 :UInt64;
}

# One field of a hash (src/storage/value_envelope.h HashField); shardkv.capnp's ExpiryRegister
# carries a list of them too.
struct HashField {
  name @0 :Data;
  ts @1 :UInt64;
  nodeId @2 :UInt32;
  deleted @3 :Bool;
  value @4 :Data;
}

# One writer's entry of a counter (src/storage/value_envelope.h CounterEntry); shardkv.capnp's
# ExpiryRegister carries a list of them too.
struct CounterEntry {
  actor @0 :UInt64;
  baseTs @1 :UInt64;
  baseNodeId @2 :UInt32;
  inc @3 :UInt64;
  dec @4 :UInt64;
}

struct ApplyCounts {
  applied @0 :UInt64;
  superseded @1 :UInt64;
  duplicate @2 :UInt64;
}

# Compare and repair, on the node that receives it, the ranges it holds from token `from` on
# (in token order), within [first, last]: all it holds (`all`), or only those whose first
# replica it is. The node stops after about `budgetMs` and answers where it got to.
struct RepairCommand {
  all @0 :Bool;
  from @1 :UInt64;
  first @2 :UInt64;
  last @3 :UInt64;
  budgetMs @4 :UInt32;
}

struct NodeStreamed {
  nodeId @0 :UInt32;
  keys @1 :UInt64;
  bytes @2 :UInt64;
}

struct RepairReport {
  rangesCompared @0 :UInt64;
  rangesDiffered @1 :UInt64;
  rangesSkipped @2 :UInt64;   # in transition (a membership change runs)
  rangesFailed @3 :UInt64;
  leavesDiffered @4 :UInt64;
  keysFetched @5 :UInt64;     # leaf entries read from the replicas
  bytesFetched @6 :UInt64;
  treeBytes @7 :UInt64;
  streamed @8 :List(NodeStreamed);  # written to each replica
  failures @9 :List(Text);
  next @10 :UInt64;  # continue from this token
  done @11 :Bool;
  rangesTotal @12 :UInt64;  # ranges in scope on this node
}

struct AntiEntropyRequest {
  union {
    tree @0 :TreeQuery;
    apply @1 :List(RepairEntry);
    repair @2 :RepairCommand;
  }
}

struct AntiEntropyReply {
  union {
    tree @0 :List(TreeNode);
    apply @1 :ApplyCounts;
    repair @2 :RepairReport;
  }
}
