# A stream task's checkpoint at the destination (meta key rebalance/ckpt/<change>/<task>,
# src/rebalance/stream_checkpoint.h). Only ever add fields; a change an older reader would
# misread bumps formatVersion, and the older reader refuses the task instead of restarting it.
@0xd13164c8e4a1d27f;

using Cxx = import "/capnp/c++.capnp";
$Cxx.namespace("shardkv::ckptwire");

enum Phase {
  pull @0;   # pulling from the task's preferred source
  merge @1;  # merging from mergeIds in turn (the preferred source failed)
}

struct StreamCheckpoint {
  formatVersion @0 :UInt32;
  phase @1 :Phase;
  done @2 :Bool;
  cursor @3 :Data;
  copies @4 :UInt64;
  tombstones @5 :UInt64;
  bytes @6 :UInt64;
  mergeIds @7 :List(UInt32);
  mergeIndex @8 :UInt64;
  rangeIndex @9 :UInt64;
  copiesDuringChange @10 :UInt64;
}
