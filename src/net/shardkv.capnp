# The shardkv wire schema (design.md "Wire protocol").
#
# Every TCP frame is a 4-byte little-endian length followed by one Cap'n Proto flat message:
# a `Request` from client to server, a `Response` back. Requests are pipelined; a response
# carries its request's id and may arrive out of order.
#
# Evolution rules (Cap'n Proto's own): never renumber or retype a field; add new fields and new
# union members with the next free ordinal. A peer that receives a union member it does not
# know answers NotSupported for that request and keeps the connection open.
#
# Members of Request.body / Response.body beyond the client ops, in the order they landed:
#   replicaWrite  ReplicaWrite -> outcome :UInt8
#   replicaRead   KeyRef -> {found, ts, nodeId, tombstone, value}
#   installMap    InstallMap -> {accepted, epoch}
#   streamScan    StreamScan -> {entries :List(StreamEntry), cursor, done, snapshotRenewed}
#   streamRange   StreamRange -> {done, copies, tombstones, bytes, resumed, sourceId,
#                 sourcesMerged}
#   countRanges   List(TokenSpan) -> List(RangeCount), one per span
#   admin         Admin {command, args :List(AdminArg)} -> payload :Data   (0.1.0; refused now)
#   change        ChangeCommand (a typed union: plan, begin, status, cancel, resume, throttle)
#                 -> changeReport :Data (a ChangeReport message, src/clustermap/change.capnp)
#   scan          Scan {cursor, count, match} -> {keys :List(Data), cursor}   (a client op)
#   replicaScan   ReplicaScan {first, last, maxEntries, maxBytes, match}
#                 -> {entries :List(ScanEntry), next, done, examined}
#   raftMessage   Data (consensus/raft_codec.h) -> ping
# The earlier plans for a push-style streamBatch and proposeMap were replaced by the pull-style
# streamScan and by installMap. The rebalancer's commands share one member whose struct is a
# union of typed commands; 0.1.0 sent them as text (`admin`), which a node now refuses with a
# message that says to upgrade the CLI.
# The Status code list in ErrorCode grows with shardkv::Status::Code, appended only.

@0x96f5cac81178cbab;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shardkv::net::wire");
using AntiEntropy = import "anti_entropy.capnp";

enum Consistency {
  default @0;   # the cluster's configured level (quorum unless changed)
  one @1;
  quorum @2;
  all @3;
}

# Mirrors shardkv::Status::Code. Values never change meaning; new codes are appended.
enum ErrorCode {
  ok @0;
  notFound @1;
  invalidArgument @2;
  alreadyExists @3;
  failedPrecondition @4;
  corruption @5;
  ioError @6;
  unavailable @7;
  timeout @8;
  staleEpoch @9;
  resourceExhausted @10;
  aborted @11;
  notSupported @12;
  internal @13;
  unauthenticated @14;
}

# Mirrors shardkv::Status::Reason, shifted by one: `unset` is what a node of an older release
# sends (it has no reasons), so the receiver knows to fall back to reading its message
# (net::InferLegacyReason, for one release); every newer node writes at least `none`.
enum ErrorReason {
  unset @0;
  none @1;
  notApplied @2;
  outcomeUnknown @3;
  noMajority @4;
  unformed @5;
  starting @6;
  superseded @7;
  late @8;
  lostInFlight @9;
  quorumMissed @10;
  wrongCluster @11;
  refusedByPolicy @12;
  notLeader @13;
  clockRejected @14;
  unexpectedEpoch @15;
  unreachable @16;
  needsRebuild @17;
  wrongType @18;
}

struct KeyRef {
  token @0 :UInt64;
  key @1 :Data;
}

struct KeyValue {
  token @0 :UInt64;
  key @1 :Data;
  value @2 :Data;
  ttlMs @3 :UInt64;   # put/multiPut: expire this long after the write (0 = no expiry)
  keepTtl @4 :Bool;   # put/multiPut: write the value only, keep the key's expiry (ttlMs ignored)
}

# A write as a replica stores it: the coordinator's timestamp and node id decide LWW.
struct ReplicaWrite {
  token @0 :UInt64;
  key @1 :Data;
  ts @2 :UInt64;
  nodeId @3 :UInt32;
  tombstone @4 :Bool;
  value @5 :Data;
  expiry @6 :ExpiryRegister;  # null: format 1 semantics
}

# A new cluster map. `adopt` asks a standalone node to join the map's cluster (cluster
# formation); otherwise the install is compare-and-set on `expectedEpoch`.
# A record's expiry register (src/storage/value_envelope.h), next to its value register. All
# fields 0 (or the struct absent, as from a 0.1.0 peer) mean format 1: the expiry register has
# the value's version and no expiry.
struct ExpiryRegister {
  explicit @0 :Bool;     # false: the fields below are ignored (format 1 semantics)
  valueAbsent @1 :Bool;  # the value register is empty (an expiry-only record)
  ts @2 :UInt64;         # the expiry register's version; (0, 0) = no opinion (KEEPTTL)
  nodeId @3 :UInt32;
  expiresAtMs @4 :UInt64;  # Unix ms; 0 = no expiry
  counter @5 :List(AntiEntropy.CounterEntry);  # the record's counter entries (format 3)
  hash @6 :List(AntiEntropy.HashField);  # the record's hash fields (format 4)
  set @7 :List(AntiEntropy.SetMember);  # the record's set entries (format 5)
}

# Client: set (expiresAtMs > 0) or clear (0, PERSIST) a key's expiry, without touching its
# value. NotFound if the key has no live value at the request's consistency level.
struct Expire {
  token @0 :UInt64;
  key @1 :Data;
  expiresAtMs @2 :UInt64;
}

# Client: set or delete fields of a hash (design.md "Hashes"); answered with `hashWrite`.
struct HashFieldValue {
  name @0 :Data;
  value @1 :Data;
}
struct HashWrite {
  token @0 :UInt64;
  key @1 :Data;
  set @2 :List(HashFieldValue);
  remove @3 :List(Data);
  onlyNew @4 :Bool;
}

# Client: add or remove members of a set (design.md "Sets"); answered with `setWrite`.
struct SetWrite {
  token @0 :UInt64;
  key @1 :Data;
  add @2 :List(Data);
  remove @3 :List(Data);
}

# Client: a whole set; answered with `setRead`.
struct SetReadResult {
  found @0 :Bool;
  members @1 :List(Data);
  expiresAtMs @2 :UInt64;
}

# Client: a whole hash; answered with `hashRead`.
struct HashReadResult {
  found @0 :Bool;
  fields @1 :List(HashFieldValue);
  expiresAtMs @2 :UInt64;
}

# Client: add `delta` to a counter (design.md "Counters"); answered with `incr`.
struct Incr {
  token @0 :UInt64;
  key @1 :Data;
  delta @2 :Int64;
}

struct InstallMap {
  map @0 :Data;
  expectedEpoch @1 :UInt64;
  adopt @2 :Bool;
  committed @3 :Bool;  # committed by consensus: install if newer, barrier, acknowledge
}

# A stream's source-side read: one batch of the inclusive token range [first, last], read
# through the source's snapshot `streamId`, continuing strictly after `cursor` (empty: from
# the start). The batch ends at whichever of maxEntries / maxBytes is reached first.
struct StreamScan {
  streamId @0 :UInt64;
  first @1 :UInt64;
  last @2 :UInt64;
  cursor @3 :Data;
  maxEntries @4 :UInt32;
  maxBytes @5 :UInt64;
  # When non-empty: scan these ranges in order (first/last ignored), from ranges[rangeIndex].
  ranges @6 :List(TokenSpan);
  rangeIndex @7 :UInt32;
}

# One stored version inside a StreamScan batch: the same fields as a ReplicaWrite (plus the
# token), so the destination applies it with the ordinary LWW replica write.
struct StreamEntry {
  token @0 :UInt64;
  key @1 :Data;
  ts @2 :UInt64;
  nodeId @3 :UInt32;
  tombstone @4 :Bool;
  value @5 :Data;
  expiry @6 :ExpiryRegister;  # null: format 1 semantics
}

# Run one stream task on its destination for up to sliceMs. sourceIds and sourceAddresses are
# parallel lists, the preferred source first.
struct StreamRange {
  changeId @0 :UInt64;
  taskId @1 :UInt64;
  first @2 :UInt64;
  last @3 :UInt64;
  sourceIds @4 :List(UInt32);
  sourceAddresses @5 :List(Text);
  mergeCount @6 :UInt32;
  rateBytesPerS @7 :UInt64;  # 0 = unthrottled
  sliceMs @8 :UInt32;
  ranges @9 :List(TokenSpan);  # when non-empty, the task's ranges (first/last ignored)
}

# An inclusive token range.
struct TokenSpan {
  first @0 :UInt64;
  last @1 :UInt64;
}

struct RangeCount {
  live @0 :UInt64;
  tombstones @1 :UInt64;
  bytes @2 :UInt64;
}

# One argument of an admin command. A list of pairs rather than a capnp Map so that the schema
# needs no generics; the decoder lets a repeated key's last value win.
struct AdminArg {
  key @0 :Text;
  value @1 :Text;
}

# The text admin command of shardkv 0.1.0 ("plan", "begin", ... with string arguments). Kept
# only so that a node can refuse one from an old CLI with a message that says to upgrade it,
# instead of misreading it; nothing sends it any more (superseded by ChangeCommand).
struct Admin {
  command @0 :Text;
  args @1 :List(AdminArg);
}

enum ChangeKind {
  add @0;
  join @1;    # a standalone node (its own cluster of one) joins
  remove @2;
  params @3;  # replication factor and quorums (ChangeSpec's replicas, writeQuorum, readQuorum)
}

struct ChangeSpec {
  kind @0 :ChangeKind;
  nodeId @1 :UInt32;
  address @2 :Text;   # add, join
  weight @3 :Float64; # add, join
  rateBytesPerS @4 :UInt64;  # per destination node; 0 = unthrottled
  streamsPerNode @5 :UInt32;
  replicas @6 :UInt32;     # params: 0 keeps the value
  writeQuorum @7 :UInt32;  # params
  readQuorum @8 :UInt32;   # params
}

struct ThrottleSpec {
  setRate @0 :Bool;  # false: keep the change's rate
  rateBytesPerS @1 :UInt64;
  setStreams @2 :Bool;
  streamsPerNode @3 :UInt32;
}

# A rebalancer command from the admin API (src/admin). Answered with a ChangeReport.
struct ChangeCommand {
  union {
    plan @0 :ChangeSpec;
    begin @1 :ChangeSpec;
    status @2 :Void;
    cancel @3 :Void;
    resume @4 :Void;
    throttle @5 :ThrottleSpec;
  }
  # Sent on by a node that does not lead to the one it believes leads (design.md "Consensus"):
  # the receiver executes it or refuses, but never forwards it again.
  forwarded @6 :Bool;
}

# One batch of an unordered whole-cluster scan (design.md "Scans"): `cursor` is a token (every
# key with a smaller token has been returned; 0 starts), `count` a hint of the work, `match` a
# Redis glob (empty: all keys).
struct Scan {
  cursor @0 :UInt64;
  count @1 :UInt32;
  match @2 :Data;
  typed @3 :Bool;  # only the keys holding `type` (SCAN ... TYPE)
  type @4 :UInt8;  # as ItemResult.kind: 0 a string, 1 a hash, 2 a set
}

# A scan's read of one replica: its versions in the inclusive range [first, last], ending at a
# token boundary after about maxEntries entries or maxBytes.
struct ReplicaScan {
  first @0 :UInt64;
  last @1 :UInt64;
  maxEntries @2 :UInt32;
  maxBytes @3 :UInt64;
  match @4 :Data;
}

# A key's newest local version in a replicaScan batch; `hidden`: a read would not return it.
struct ScanEntry {
  token @0 :UInt64;
  key @1 :Data;
  ts @2 :UInt64;
  nodeId @3 :UInt32;
  hidden @4 :Bool;
  # The expiry register's version (a record's expiry is its own LWW register): replicas that
  # hold the same value version but differ in expiry are ordered by it.
  expiryTs @5 :UInt64;
  expiryNodeId @6 :UInt32;
  kind @7 :UInt8;  # as ItemResult.kind
}

struct Request {
  id @0 :UInt64;         # chosen by the sender, echoed in the Response; 0 is reserved
  epoch @1 :UInt64;      # the sender's cluster map epoch (0 = none yet)
  clusterId @2 :UInt64;  # 0 = unknown; otherwise a mismatch is refused
  clientTs @3 :UInt64;   # highest HLC timestamp the client has seen
  consistency @4 :Consistency;

  body :union {
    ping @5 :Void;
    get @6 :KeyRef;
    put @7 :KeyValue;
    delete @8 :KeyRef;
    multiGet @9 :List(KeyRef);
    multiPut @10 :List(KeyValue);
    stats @11 :Void;
    getClusterMap @12 :Void;
    replicaWrite @13 :ReplicaWrite;
    replicaRead @14 :KeyRef;
    installMap @15 :InstallMap;
    streamScan @16 :StreamScan;
    streamRange @17 :StreamRange;
    countRanges @18 :List(TokenSpan);
    admin @19 :Admin;  # 0.1.0 only: refused (see Admin)
    change @21 :ChangeCommand;
    expire @22 :Expire;  # answered with `put` (the write's timestamp)
    scan @23 :Scan;
    replicaScan @24 :ReplicaScan;
    raftMessage @25 :Data;  # node to node: one Raft message, answered with `ping`
    antiEntropy @27 :AntiEntropy.AntiEntropyRequest;  # anti_entropy.capnp
    # Node to node: a coordinator's batch of replica writes to this replica (MSET, pipelined
    # SETs), applied in one storage batch; answered with one result per write, in order.
    replicaWriteBatch @28 :List(ReplicaWrite);
    incr @29 :Incr;
    hashWrite @30 :HashWrite;
    hashRead @31 :KeyRef;
    setWrite @32 :SetWrite;
    setRead @33 :KeyRef;
  }
  # Wall-clock ms (Unix epoch) after which the sender no longer waits for this request (0 =
  # none). A node drops a client request that reaches it later, e.g. one queued in its socket
  # while it was paused: the client has retried it meanwhile, and coordinating it now would give
  # the old write a newer timestamp than the writes acknowledged since.
  deadlineMs @20 :UInt64;
  # Sent on by a node whose clock is off the cluster's (design.md "Clock offsets"): the receiver
  # coordinates it, and never sends it on again.
  forwarded @26 :Bool;
}

# One key's outcome inside a multi-key op: its own status, so one unavailable replica set does
# not fail the whole batch.
struct ItemResult {
  code @0 :ErrorCode;
  message @1 :Text;
  found @2 :Bool;
  value @3 :Data;
  ts @4 :UInt64;
  reason @5 :ErrorReason;
  kind @6 :UInt8;  # multiGet, when found: 0 a string, 1 a hash, 2 a set
}

struct Stat {
  name @0 :Text;
  value :union {
    int @1 :Int64;
    real @2 :Float64;
    text @3 :Text;  # an info stat (version, advertised address); older readers skip it
  }
}

struct Response {
  id @0 :UInt64;      # the request's id; 0 when the request could not be parsed
  epoch @1 :UInt64;   # the responder's map epoch
  ts @2 :UInt64;      # the responder's HLC timestamp (clients track the highest they see)
  clusterMap @3 :Data;  # non-empty when the request's epoch was older: the newer map
  wallClockMs @49 :UInt64;  # the responder's wall clock (Unix ms) as it answered: clock offsets

  body :union {
    error :group {
      code @4 :ErrorCode;
      message @5 :Text;
      reason @50 :ErrorReason;
    }
    ping @6 :Void;
    get :group {
      found @7 :Bool;
      value @8 :Data;
      ts @9 :UInt64;
      expiresAtMs @41 :UInt64;  # Unix ms when the found value expires; 0 = no expiry
      kind @54 :UInt8;  # when found: 0 a string, 1 a hash, 2 a set (value empty for both)
    }
    put :group {
      ts @10 :UInt64;
    }
    delete :group {
      ts @11 :UInt64;
    }
    multiGet @12 :List(ItemResult);
    multiPut @13 :List(ItemResult);
    stats @14 :List(Stat);
    getClusterMap @15 :Data;
    replicaWrite @16 :UInt8;  # the storage outcome: 0 applied, 1 superseded, 2 duplicate
    replicaRead :group {
      found @17 :Bool;
      ts @18 :UInt64;
      nodeId @19 :UInt32;
      tombstone @20 :Bool;
      value @21 :Data;
      expiry @42 :ExpiryRegister;
    }
    installMap :group {
      accepted @22 :Bool;
      epoch @23 :UInt64;
    }
    streamScan :group {
      entries @24 :List(StreamEntry);
      cursor @25 :Data;          # pass back to continue
      done @26 :Bool;            # the range is exhausted
      snapshotRenewed @27 :Bool; # the source took a new snapshot for this call
      rangeIndex @37 :UInt32;    # with a ranges request: the range the cursor belongs to
    }
    # Cumulative progress of the task (from its checkpoint), not just this slice.
    streamRange :group {
      done @28 :Bool;
      copies @29 :UInt64;
      tombstones @30 :UInt64;
      bytes @31 :UInt64;
      resumed @32 :Bool;
      sourceId @33 :UInt32;  # 0 when merging
      sourcesMerged @34 :UInt32;
      rangesDone @38 :UInt64;
      copiesDuringChange @39 :UInt64;  # of copies, versions written after the change began
    }
    countRanges @35 :List(RangeCount);  # one per requested span, same order
    admin @36 :Data;  # 0.1.0 only: a text report; never sent any more
    # The node's ChangeReport, encoded by src/clustermap (a Cap'n Proto message with its own
    # format version, so the report can grow without this schema).
    changeReport @40 :Data;
    scan :group {
      keys @43 :List(Data);
      cursor @44 :UInt64;  # 0: the scan is complete
    }
    replicaScan :group {
      entries @45 :List(ScanEntry);
      next @46 :UInt64;
      done @47 :Bool;
      examined @48 :UInt32;
    }
    antiEntropy @51 :AntiEntropy.AntiEntropyReply;  # anti_entropy.capnp
    replicaWriteBatch @52 :List(ReplicaWriteResult);
    incr @53 :Int64;  # the counter's value after the increment
    hashWrite @55 :UInt32;  # fields added or removed
    hashRead @56 :HashReadResult;
    setWrite @57 :UInt32;  # members added or removed
    setRead @58 :SetReadResult;
  }
}

# One write's result in a replicaWriteBatch reply: the storage outcome as `replicaWrite`'s, or
# the error that write alone met (code OK: none).
struct ReplicaWriteResult {
  outcome @0 :UInt8;
  code @1 :ErrorCode;
  message @2 :Text;
  reason @3 :ErrorReason;
}
