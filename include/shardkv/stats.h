// The names of a node's statistics, declared once (as Envoy declares its stats with macros):
// the node fills its `stats` reply from this list, and `shardkv stats`, `cluster status`, the
// Admin API and the metrics endpoint of a later release read the same names. A test checks that
// a node reports exactly these (tests/node/stats_registry_test.cc).
//
// Counters are int64 totals or current counts; gauges are doubles; info values are text. `ops.<op>`
// is a family: one counter per request op ("ops.get", "ops.put", ...).
//
// Thread-safety: constants only.
#pragma once

#include <array>
#include <string_view>

namespace shardkv::stats {

// X(name, help). Counters.
#define SHARDKV_NODE_COUNTERS(X)                                                                   \
  X(node_id, "the node's id")                                                                      \
  X(uptime_s, "seconds since the node started")                                                    \
  X(wall_clock_ms, "the node's wall clock (Unix ms) when it answered, for clock offsets")          \
  X(client_errors, "failed client get/put/delete requests (not NotFound, StaleEpoch, Timeout)")    \
  X(connections, "open client and peer connections (shardkv protocol; not Redis's)")               \
  X(connections_total, "connections accepted since start (shardkv protocol; not Redis's)")         \
  X(redis_connections, "open connections to the Redis listener (0 without one)")                   \
  X(redis_connections_total, "Redis connections accepted since start")                             \
  X(redis_connections_rejected, "Redis connections refused at the connection limit")               \
  X(bad_frames, "frames refused as malformed or oversized")                                        \
  X(quorum_failures, "coordinated operations that missed their quorum")                            \
  X(read_repairs, "stale replicas repaired by a read")                                             \
  X(hints_written, "hinted-handoff writes stored for unreachable replicas")                        \
  X(hints_not_written, "replica misses of writes that were not acknowledged: never hinted")        \
  X(hints_pending, "hints not yet delivered")                                                      \
  X(hints_replayed, "hints delivered")                                                             \
  X(hints_expired, "hints dropped after the tombstone grace")                                      \
  X(hints_discarded, "hints deleted unsent because their target left the cluster")                 \
  X(stale_epoch_replies, "requests refused because the sender's map was older")                    \
  X(redriven, "operations re-driven after a map change")                                           \
  X(writes_restamped, "writes re-stamped because a replica held a newer version")                  \
  X(requests_late, "client requests dropped unserved: they arrived past their client's deadline")  \
  X(requests_sent_on, "client requests sent on to a node whose clock agrees (this one's is off)")  \
  X(rebalance_commits, "cluster maps this node committed as rebalance driver")                     \
  X(rebalance_task_errors, "failed stream task calls while driving a change")                      \
  X(rebalance_plans_counted, "change plans this node counted (each counts every key once)")        \
  X(stream_tasks_resumed, "stream tasks continued from a checkpoint on this node")                 \
  X(stream_entries_pulled, "entries this node pulled as a stream destination")                     \
  X(ranges_dropped, "token ranges dropped after a change moved them away")                         \
  X(clock_skewed, "1 while this node's clock is off a majority's: it sends client requests on")    \
  X(clock_offset_ms, "this node's clock minus the other members' (median of the gossip samples)")  \
  X(consensus_leader_id, "the map consensus leader this node knows (0: none, or no consensus)")    \
  X(consensus_is_leader, "1 while this node leads the map consensus")                              \
  X(consensus_voters, "voters in the map consensus configuration this node knows")                 \
  X(consensus_fenced, "1 while this node does not coordinate: no leader heard for the lease")      \
  X(consensus_applied_epoch, "epoch of the newest map the consensus applied on this node")         \
  X(consensus_store_errors, "Raft log store writes that failed on this node (a full disk)")        \
  X(consensus_recoveries, "times this node's Raft server started again after a store error")       \
  X(consensus_changes_given_up, "voter changes this node gave up as leader (deadline, catch-up)")  \
  X(epoch, "epoch of the node's cluster map (0 while unformed)")                                   \
  X(formed, "1 once the node is in a cluster, 0 while unformed (no cluster id, no map)")           \
  X(keys_approx, "estimated keys stored (RocksDB estimate, tombstones included)")                  \
  X(live_keys, "keys holding a live value here (counted; expired ones drop out within ~1 s)")      \
  X(live_keys_expiring, "of live_keys: the keys with a TTL")                                       \
  X(live_keys_counted, "1 once live_keys covers every record (0 while a background count runs)")   \
  X(bytes_approx, "estimated bytes stored")                                                        \
  X(storage_io_errors, "storage operations that failed with an I/O error")                         \
  X(storage_failures, "storage I/O failure episodes since start (full, read-only, failing disk)")  \
  X(needs_repair, "1 while the node needs repair (refuses replica reads and streams), else 0")     \
  X(rebuilt_at_ms, "when its last rebuild (or repair of every range) started (Unix ms), 0: never") \
  X(repair_background, "1 while background anti-entropy runs on this node, else 0")                \
  X(repair_period_ms, "background anti-entropy's period: each range compared once within it")      \
  X(repair_passes, "background anti-entropy passes completed (every driven range visited)")        \
  X(repair_last_full_ms, "when the last pass that compared every range completed (Unix ms), 0")    \
  X(repair_ranges_compared, "ranges this node compared with their replicas (command, background)") \
  X(repair_ranges_differed, "of those, the ranges whose replicas differed")                        \
  X(repair_ranges_failed, "of those, the ranges not fully repaired (a replica failed or refused)") \
  X(repair_ranges_skipped, "ranges skipped by repair: in a membership change")                     \
  X(repair_keys_in, "records repair wrote to this node (newer versions it lacked)")                \
  X(repair_keys_out, "records this node's repairs wrote to other replicas")                        \
  X(repair_tree_bytes, "hash tree bytes this node's repairs exchanged with other replicas")        \
  X(gc_blocked_ranges, "ranges held here not repaired with every replica for a grace: GC waits")   \
  X(gc_kept_unrepaired, "tombstones past the grace kept by compaction: range not repaired since")  \
  X(gc_waits_for_repair, "1 if tombstone GC here waits for a repair with every replica, 0: grace") \
  X(gc_waits_since_ms, "since when GC here has waited for repairs (Unix ms; 0: since created)")

// Gauges.
#define SHARDKV_NODE_GAUGES(X)                                       \
  X(disk_full, "1 while writes fail for lack of space, else 0")      \
  X(storage_failing, "1 while storage fails with I/O errors")        \
  X(latency_p50_us, "median request latency, microseconds")          \
  X(latency_p99_us, "99th percentile request latency, microseconds") \
  X(latency_p999_us, "99.9th percentile request latency, microseconds")

// Info: text values.
#define SHARDKV_NODE_INFO(X)                                                                     \
  X(version, "the shardkv release the node runs (CMake project VERSION)")                        \
  X(address, "the address the node advertises to peers and clients (host:port)")                 \
  X(redis_address, "host:port of the node's Redis listener (reported only when it has one)")     \
  X(metrics_address, "host:port of the node's metrics listener (absent without one)")            \
  X(needs_repair_reason, "why the node needs repair (reported only while it does)")              \
  X(repair_marks, "nodes this node marked as needing repair, as id:ms,... (absent if none)")     \
  X(storage_error, "the storage I/O error now (reported only while storage_failing)")            \
  X(consensus_voter_ids, "the voters of the map consensus configuration this node knows: 1,2,3") \
  X(consensus_pending_change, "the voter change under way, or why none can be made (leader)")    \
  X(consensus_given_up, "the last voter change given up, when and why (absent if none)")         \
  X(consensus_store_error, "while this node is out of the consensus after a Raft store error")   \
  X(gc_blocked_by,                                                                               \
    "replicas down or needing repair that keep GC blocked here: 3,4 (absent if none)")

#define SHARDKV_STAT_NAME_(name, help) inline constexpr std::string_view name = #name;
SHARDKV_NODE_COUNTERS(SHARDKV_STAT_NAME_)
SHARDKV_NODE_GAUGES(SHARDKV_STAT_NAME_)
SHARDKV_NODE_INFO(SHARDKV_STAT_NAME_)
#undef SHARDKV_STAT_NAME_

// The per-op counter family: kOpsPrefix + op name.
inline constexpr std::string_view kOpsPrefix = "ops.";

struct StatInfo {
  std::string_view name;
  std::string_view help;
};

#define SHARDKV_STAT_INFO_(name, help) StatInfo{#name, help},
inline constexpr std::array kCounters = {SHARDKV_NODE_COUNTERS(SHARDKV_STAT_INFO_)};
inline constexpr std::array kGauges = {SHARDKV_NODE_GAUGES(SHARDKV_STAT_INFO_)};
inline constexpr std::array kInfo = {SHARDKV_NODE_INFO(SHARDKV_STAT_INFO_)};
#undef SHARDKV_STAT_INFO_

}  // namespace shardkv::stats
