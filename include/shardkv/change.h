// The typed records of a membership change: what the rebalancer persists about a change (in the
// cluster map's change detail, so every node and a takeover driver know it) and what a node
// reports to the admin API (plan, status, watch). One schema, used by the node, the Admin API,
// the CLI and the tests (design.md "Rebalancing: the transition protocol").
//
// Encode/Decode are the persisted form inside the map and the admin payload (implemented in
// src/clustermap, schema src/clustermap/change.capnp): Cap'n Proto flat-array messages carrying
// a format version. A field added later is ignored by an older reader instead of breaking it; a
// record of a newer format version is refused (NotSupported, "upgrade this node") rather than
// misread. Decode also reads the key=value text that v0.1.0 wrote (read-only: nothing writes it
// any more), so a map persisted by that release keeps its change record.
//
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv {

// The format versions Encode writes and the newest Decode reads. Bump one when a change would be
// misread by a reader of the previous version (a new enumerant, a field whose absence changes the
// meaning); adding a field a reader may ignore does not need a bump. Version 0 is the v0.1.0
// key=value text (read-only).
// Records are written at version 1 except a params change's (version 2: its kind is new), so a
// node of the previous release still reads every membership change.
inline constexpr uint32_t kChangeRecordFormatVersion = 2;
inline constexpr uint32_t kChangeReportFormatVersion = 1;

// What a membership change does. kJoin adds a node that is already running standalone (it was
// started without a cluster and formed a cluster of one): Admin's ChangeRequest uses all three.
// A change record holds kAdd, kRemove or kParams: once Admin has resolved a join's node id, the
// change is an add like any other, and is recorded as one (as v0.1.0 recorded it, "add").
// kParams changes the replication factor and quorums of the same members (`shardkv cluster set`),
// through the same transition: the pending placement is the current nodes under the new RF.
enum class ChangeKind : uint8_t { kAdd, kJoin, kRemove, kParams };
// "add", "join", "remove", "params" (the CLI's and the JSON output's names).
std::string_view ChangeKindName(ChangeKind kind);

// The states `rebalance status` reports (issue: planned|streaming|read_new|new_only|cleanup|
// done|failed|cancelled).
enum class ChangeState : uint8_t {
  kPlanned,
  kStreaming,
  kReadNew,
  kNewOnly,
  kCleanup,
  kDone,
  kFailed,
  kCancelled,
};
std::string_view ChangeStateName(ChangeState s);
StatusOr<ChangeState> ParseChangeState(std::string_view name);

// One stream task's share of the plan, so that a driver starting the streams (or taking them
// over) need not count the keys again.
struct TaskPlan {
  uint64_t task_id = 0;
  uint32_t destination = 0;
  uint64_t copies = 0;
  uint64_t tombstones = 0;
  uint64_t bytes = 0;

  bool operator==(const TaskPlan&) const = default;
};

struct ChangeRecord {
  uint64_t change_id = 0;
  ChangeKind kind = ChangeKind::kAdd;  // kAdd, kRemove or kParams (see ChangeKind)
  uint32_t node_id = 0;                // 0 for kParams
  ChangeState state = ChangeState::kPlanned;
  std::string error;        // why it failed
  uint64_t from_epoch = 0;  // the epoch the change started from
  uint64_t rate_bytes_per_s = 32u << 20;
  uint32_t streams_per_node = 2;
  // Plan totals, counted exactly on the old replicas before the change was committed.
  uint64_t planned_copies = 0;
  uint64_t planned_tombstones = 0;
  uint64_t planned_bytes = 0;
  uint64_t planned_ranges = 0;        // stream tasks (each carries many ranges; see plan.h)
  uint64_t planned_token_ranges = 0;  // moving token ranges x their destinations
  uint64_t remapped_keys = 0;
  uint64_t live_keys = 0;
  uint64_t total_copies = 0;  // live keys x RF
  double ideal_fraction = 0;
  // Replication after the change (the map's effective values: RF capped by the node count), and
  // the configured RF: a remove that leaves fewer nodes than RF lowers them.
  uint32_t replicas_configured = 0;
  uint32_t replicas_after = 0;
  uint32_t write_quorum_after = 0;
  uint32_t read_quorum_after = 0;
  // The effective values before the change (0 in a record of an older build).
  uint32_t replicas_before = 0;
  uint32_t write_quorum_before = 0;
  uint32_t read_quorum_before = 0;
  // kParams: the configured values the change sets (0 for the other kinds).
  uint32_t params_replicas = 0;
  uint32_t params_write_quorum = 0;
  uint32_t params_read_quorum = 0;
  // Outcome (filled as the change ends).
  uint64_t moved_copies = 0;
  uint64_t moved_tombstones = 0;
  uint64_t moved_bytes = 0;
  uint64_t resumed_tasks = 0;
  // Why moved can exceed planned: of moved_copies, versions written after the change began (a
  // joint write the stream also carried), and copies an earlier drive had already streamed
  // before a resume or takeover continued from its checkpoint (counted once, not re-streamed).
  uint64_t moved_during_change = 0;
  uint64_t resumed_copies = 0;
  // Drives of this change that ended in a driver's death (takeovers: the driver no longer answers
  // when the next leader takes over; a driver that handed the change on as it stopped, or one that
  // lost leadership but answers, is not counted) since it began or was last
  // resumed. The second one fails the change instead of driving the streams again.
  uint32_t takeovers = 0;
  // A driver that stopped gracefully (SIGTERM, Node::Stop) marks the change as handed on before it
  // hands consensus leadership to another voter; the takeover that follows clears the mark and
  // does not count (a rolling restart is not a driver death).
  uint32_t handed_off_by = 0;
  uint32_t failed_driver = 0;  // the driver whose death or error failed it (0: none)
  uint64_t started_ms = 0;
  uint64_t finished_ms = 0;
  int64_t client_errors_at_start = 0;
  int64_t client_errors = 0;  // during the change, summed over the nodes
  // Per stream task, as planned (empty in a v0.1.0 record and until the planner fills it).
  std::vector<TaskPlan> task_plans;

  bool operator==(const ChangeRecord&) const = default;

  std::string Encode() const;
  static StatusOr<ChangeRecord> Decode(std::string_view bytes);
};

// One source -> destination stream's progress.
struct StreamProgress {
  uint32_t source = 0;
  uint32_t destination = 0;
  uint64_t tasks_total = 0;
  uint64_t tasks_done = 0;
  uint64_t ranges_total = 0;
  uint64_t ranges_done = 0;
  uint64_t copies_planned = 0;
  uint64_t copies_done = 0;
  uint64_t bytes_planned = 0;
  uint64_t bytes_done = 0;

  bool operator==(const StreamProgress&) const = default;
};

struct NodeShare {
  uint32_t id = 0;
  std::string address;
  std::string state;
  double share_before = 0;  // of all copies
  double share_after = 0;

  bool operator==(const NodeShare&) const = default;
};

struct ChangeReport {
  bool has_change = false;  // false: no change was ever made
  ChangeRecord record;
  uint64_t epoch = 0;
  uint32_t driver = 0;  // the node driving the change (the claimant)
  std::string driver_address;
  bool from_driver = false;  // false: a snapshot from the map only, without live progress
  double elapsed_s = 0;
  uint64_t copies_done = 0;
  uint64_t tombstones_done = 0;
  uint64_t bytes_done = 0;
  uint64_t copies_during_change = 0;  // of copies_done, versions written during the change
  std::vector<StreamProgress> streams;
  std::vector<NodeShare> shares;  // plan only

  bool operator==(const ChangeReport&) const = default;

  std::string Encode() const;
  static StatusOr<ChangeReport> Decode(std::string_view bytes);
};

// What a change command (Admin::PlanChange, BeginChange) asks for. ChangeKind: for kJoin, node_id 0
// takes the id the node reports. kParams changes the replication factor and quorums: node_id,
// address and weight are unused, and a 0 in replicas, write_quorum or read_quorum keeps that value
// as configured. The result must have 1 <= W, Q <= RF (InvalidArgument otherwise, naming the flag),
// and must change something.
struct ChangeRequest {
  ChangeKind kind = ChangeKind::kAdd;
  uint32_t node_id = 0;
  std::string address;        // the new node's host:port (add, join); unused for remove
  double weight = 1.0;        // add, join
  uint32_t replicas = 0;      // kParams
  uint32_t write_quorum = 0;  // kParams
  uint32_t read_quorum = 0;   // kParams
};

// Stream limits of a change. rate_bytes_per_s 0 = unthrottled.
struct ChangeThrottle {
  uint64_t rate_bytes_per_s = 32u << 20;
  uint32_t streams_per_node = 2;
};

}  // namespace shardkv
