// ClusterCommands: the commands that describe the cluster rather than one key: INFO, DBSIZE and
// the emulated CLUSTER INFO|SLOTS|SHARDS|NODES|KEYSLOT|MYID.
//
// The emulation (design.md "Redis front end"): any shardkv node coordinates any key, so there
// is no slot ownership to report. The 16384 slots are spread in equal contiguous ranges over
// the members that answer with a Redis address, in id order, so that cluster-aware clients
// spread their connections over every node. A table that is out of date is never wrong, only
// less even: no MOVED or ASK is ever sent.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redis/command_context.h"
#include "redis/redis_session.h"

namespace shardkv::redis {

inline constexpr uint32_t kClusterSlots = 16384;

class ClusterCommands {
 public:
  explicit ClusterCommands(const CommandContext* context) : c_(context) {}

  // INFO, DBSIZE or CLUSTER <sub>; `args` passed the arity check and authentication.
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  void Info(const RedisSession& session, Args args, ReplyDone done);
  void Cluster(const RedisSession& session, const std::string& sub, Args args,
               std::vector<NodeView> nodes, ReplyDone done);

  const CommandContext* c_;
};

// Redis Cluster's hash slot of `key` (CRC16-XMODEM mod 16384, of the {hash tag} if any).
uint32_t KeySlot(std::string_view key);
// A 40-hex-digit Redis node id for shardkv node `node_id` of cluster `cluster_id`.
std::string RedisNodeId(uint64_t cluster_id, uint32_t node_id);
// DBSIZE and INFO keyspace: the live keys the members count (each holds a copy of its replicas'
// keys), summed and divided by the replication factor, rounded; `expiring` of them have a TTL.
// A member of an older release, which reports no live_keys, adds RocksDB's estimate instead.
struct KeyspaceCounts {
  int64_t keys = 0;
  int64_t expiring = 0;
};
KeyspaceCounts CountKeys(const std::vector<NodeView>& nodes, uint32_t replicas);

// The emulated slots [*first, *last] that CLUSTER SLOTS|SHARDS|NODES give node `self_id` under
// `nodes` (the members with a Redis address, equal contiguous ranges in id order); false when
// it is given none. A node-scoped connection's SCAN and KEYS cover the token slots of this range
// and its DBSIZE this range's share (design.md "Scans").
bool OwnSlotRange(const std::vector<NodeView>& nodes, uint32_t self_id, uint32_t* first,
                  uint32_t* last);
// A node-scoped DBSIZE: slots [first, last]'s share of `total` keys, floor(total * (last + 1) /
// 16384) - floor(total * first / 16384), so that the shares of ranges that tile the slots add
// up to `total` exactly.
int64_t SlotShare(int64_t total, uint32_t first, uint32_t last);

}  // namespace shardkv::redis
