# A membership change's record (persisted in the cluster map's pendingDetail) and the report a
# node sends to the admin API (include/shardkv/change.h). Field ordinals are the compatibility
# contract: only ever add fields (an older reader skips what it does not know). A change that an
# older reader would misread (a new enumerant, a field whose absence changes the meaning) bumps
# formatVersion instead, and an older reader refuses the record (design.md "Upgrade policy").
@0xae85cf4dd3fb445b;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shardkv::changewire");

enum ChangeState {
  planned @0;
  streaming @1;
  readNew @2;
  newOnly @3;
  cleanup @4;
  done @5;
  failed @6;
  cancelled @7;
}

enum ChangeKind {
  add @0;
  join @1;
  remove @2;
  params @3;  # replication factor and quorums (format version 2)
}

# One stream task's share of the plan, counted before the change was committed.
struct TaskPlan {
  taskId @0 :UInt64;
  destination @1 :UInt32;
  copies @2 :UInt64;
  tombstones @3 :UInt64;
  bytes @4 :UInt64;
}

struct ChangeRecord {
  formatVersion @0 :UInt32;
  changeId @1 :UInt64;
  kind @2 :ChangeKind;
  nodeId @3 :UInt32;
  state @4 :ChangeState;
  error @5 :Text;
  fromEpoch @6 :UInt64;
  rateBytesPerS @7 :UInt64;
  streamsPerNode @8 :UInt32;
  plannedCopies @9 :UInt64;
  plannedTombstones @10 :UInt64;
  plannedBytes @11 :UInt64;
  plannedRanges @12 :UInt64;
  plannedTokenRanges @13 :UInt64;
  remappedKeys @14 :UInt64;
  liveKeys @15 :UInt64;
  totalCopies @16 :UInt64;
  idealFraction @17 :Float64;
  replicasConfigured @18 :UInt32;
  replicasAfter @19 :UInt32;
  writeQuorumAfter @20 :UInt32;
  readQuorumAfter @21 :UInt32;
  movedCopies @22 :UInt64;
  movedTombstones @23 :UInt64;
  movedBytes @24 :UInt64;
  resumedTasks @25 :UInt64;
  movedDuringChange @26 :UInt64;
  resumedCopies @27 :UInt64;
  takeovers @28 :UInt32;
  failedDriver @29 :UInt32;
  startedMs @30 :UInt64;
  finishedMs @31 :UInt64;
  clientErrorsAtStart @32 :Int64;
  clientErrors @33 :Int64;
  taskPlans @34 :List(TaskPlan);
  # Effective replication and quorums before the change (0 in a record of an older build).
  replicasBefore @35 :UInt32;
  writeQuorumBefore @36 :UInt32;
  readQuorumBefore @37 :UInt32;
  # A params change: the configured values it sets (0 for the other kinds).
  paramsReplicas @38 :UInt32;
  paramsWriteQuorum @39 :UInt32;
  paramsReadQuorum @40 :UInt32;
  # The driver that handed the change on as it stopped gracefully (0: none); the next driver's
  # takeover does not count it as a death. An older reader ignores it (and counts the takeover).
  handedOffBy @41 :UInt32;
}

struct StreamProgress {
  source @0 :UInt32;
  destination @1 :UInt32;
  tasksTotal @2 :UInt64;
  tasksDone @3 :UInt64;
  rangesTotal @4 :UInt64;
  rangesDone @5 :UInt64;
  copiesPlanned @6 :UInt64;
  copiesDone @7 :UInt64;
  bytesPlanned @8 :UInt64;
  bytesDone @9 :UInt64;
}

struct NodeShare {
  id @0 :UInt32;
  address @1 :Text;
  state @2 :Text;  # the node state's name ("up", "joining", ...), as shown to operators
  shareBefore @3 :Float64;
  shareAfter @4 :Float64;
}

# Sent over the wire only (the admin payload), never persisted; versioned all the same so that a
# mixed-version cluster reports "upgrade this node" instead of a misread status.
struct ChangeReport {
  formatVersion @0 :UInt32;
  hasChange @1 :Bool;
  record @2 :ChangeRecord;
  epoch @3 :UInt64;
  driver @4 :UInt32;
  driverAddress @5 :Text;
  fromDriver @6 :Bool;
  elapsedS @7 :Float64;
  copiesDone @8 :UInt64;
  tombstonesDone @9 :UInt64;
  bytesDone @10 :UInt64;
  copiesDuringChange @11 :UInt64;
  streams @12 :List(StreamProgress);
  shares @13 :List(NodeShare);
}
