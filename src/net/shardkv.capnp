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
# Planned members of Request.body / Response.body, in the order they are expected to land:
#   replicaWrite  {token, key, value, ts :UInt64, nodeId :UInt32, tombstone :Bool}
#   replicaRead   {token, key} -> {found, value, ts, nodeId, tombstone}
#   streamBatch   {streamId, seq, list of replica entries, done :Bool} -> {ackedSeq}
#   proposeMap    {expectedEpoch, map :Data} -> {accepted, map :Data}
#   admin ops     addNode / removeNode / rebalanceStatus / cancel, each its own member.
# The Status code list in ErrorCode grows with shardkv::Status::Code, appended only.

@0x96f5cac81178cbab;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shardkv::net::wire");

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
}

struct KeyRef {
  token @0 :UInt64;
  key @1 :Data;
}

struct KeyValue {
  token @0 :UInt64;
  key @1 :Data;
  value @2 :Data;
}

# A write as a replica stores it: the coordinator's timestamp and node id decide LWW.
struct ReplicaWrite {
  token @0 :UInt64;
  key @1 :Data;
  ts @2 :UInt64;
  nodeId @3 :UInt32;
  tombstone @4 :Bool;
  value @5 :Data;
}

# A new cluster map. `adopt` asks a standalone node to join the map's cluster (cluster
# formation); otherwise the install is compare-and-set on `expectedEpoch`.
struct InstallMap {
  map @0 :Data;
  expectedEpoch @1 :UInt64;
  adopt @2 :Bool;
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
  }
}

# One key's outcome inside a multi-key op: its own status, so one unavailable replica set does
# not fail the whole batch.
struct ItemResult {
  code @0 :ErrorCode;
  message @1 :Text;
  found @2 :Bool;
  value @3 :Data;
  ts @4 :UInt64;
}

struct Stat {
  name @0 :Text;
  value :union {
    int @1 :Int64;
    real @2 :Float64;
  }
}

struct Response {
  id @0 :UInt64;      # the request's id; 0 when the request could not be parsed
  epoch @1 :UInt64;   # the responder's map epoch
  ts @2 :UInt64;      # the responder's HLC timestamp (clients track the highest they see)
  clusterMap @3 :Data;  # non-empty when the request's epoch was older: the newer map

  body :union {
    error :group {
      code @4 :ErrorCode;
      message @5 :Text;
    }
    ping @6 :Void;
    get :group {
      found @7 :Bool;
      value @8 :Data;
      ts @9 :UInt64;
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
    }
    installMap :group {
      accepted @22 :Bool;
      epoch @23 :UInt64;
    }
  }
}
