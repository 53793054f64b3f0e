// How the CLI shows a rebalance plan (`cluster add-node|join|remove-node`) and a rebalance
// status snapshot (`rebalance status --json`). Both JSON schemas are stable: fields are never
// renamed or removed, new ones may be added. 64-bit ids (change_id) are strings, since they do
// not fit a JSON double. Fractions are in [0, 1]; *_pct fields are percentages.
//
// Plan (`cluster add-node|join|remove-node --json`):
//   {
//     "kind": "add" | "remove", "node_id": 4,
//     "address": "127.0.0.1:7003" | null,   // add only
//     "weight": 1.0 | null,                  // add only
//     "epoch": 1,                            // the map the plan was computed from
//     "planned_by": 1, "planned_by_address": "127.0.0.1:7000",  // the node that planned (it
//     drives) "live_keys": 20000, "total_copies": 60000,   // live keys x RF "planned_copies":
//     15000, "planned_tombstones": 0, "planned_bytes": 2400000, "planned_ranges": 480, // stream
//     tasks "moved_fraction": 0.25,                // planned_copies / total_copies
//     "ideal_fraction": 0.25,                // weight share the node gains or loses
//     "remapped_keys": 15000,                // distinct keys whose replica set changes
//     "rate_bytes_per_s": 33554432, "streams_per_node": 2,
//     "nodes": [{"id", "address", "state", "share_before_pct", "share_after_pct"}],  // % of
//                                            // all copies each node holds before and after
//     "streams": [{"source", "destination", "ranges", "copies", "bytes"}],
//     "started": false | true,               // false with --plan-only, or when refused
//     "change_id": "1234" | null,            // the started change
//     "state": "planned" | "streaming" | ... // the started change's state
//   }
//
// Status (`rebalance status --json`): see StatusJson below.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/change.h"

namespace shardkv::cli {

// A member that does not hold a change's final map yet: `epoch` is the one it holds, unset when
// it did not answer.
struct BehindMember {
  uint32_t id = 0;
  std::optional<uint64_t> epoch;
};

struct PlanContext {
  std::string address;  // add: the new node's address
  double weight = 1.0;  // add
  std::string asked;    // the node asked (it forwards to the leader, which plans)
};

// The plan as tables: per-node shares, the source -> destination matrix, the moved fraction
// beside the ideal, and the keys remapped.
void PrintPlanTable(std::FILE* out, const ChangeReport& plan, const PlanContext& ctx);
// The plan as one JSON object (schema above). `begun`: the reply to "begin", or null.
std::string PlanJson(const ChangeReport& plan, const PlanContext& ctx, const ChangeReport* begun);

// A status snapshot as one JSON object:
//   {"state": "streaming" | ... | "none",   // none: no change was ever made (other fields null)
//    "change_id": "1234", "kind": "add", "node_id": 4,
//    "planned_copies", "moved_copies",       // moved: live progress while streaming (from the
//                                            // driver), the final count once finished
//    "total_copies", "remapped_keys", "ideal_fraction",
//    "moved_fraction",                       // moved_copies / total_copies
//    "client_errors",                        // errors the nodes returned to clients since the
//                                            // change began (final once done; a live sum of
//                                            // the reachable nodes' counters before)
//    "planned_bytes", "moved_bytes", "rate_bytes_per_s", "streams_per_node", "resumed_tasks",
//    "started_ms", "finished_ms",            // unix ms; finished_ms 0 while running
//    "elapsed_s", "epoch", "driver", "driver_address",
//    "live": true,                           // the snapshot came from the driver (streams and
//                                            // moved_* are live while streaming)
//    "error": "",                            // why it failed
//    "streams": [{"source", "destination", "ranges_total", "ranges_done", "copies_planned",
//                 "copies_done", "bytes_planned", "bytes_done"}],  // while streaming only
//    "members_behind": [{"id", "epoch"}]}   // once the change ended: members not yet holding
//                                            // its final map (epoch null: did not answer)
std::string StatusJson(const ChangeReport& r, int64_t client_errors,
                       const std::vector<BehindMember>& behind = {});

}  // namespace shardkv::cli
