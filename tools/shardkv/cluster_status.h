// `shardkv cluster status` (also printed at the end of `cluster up`): what nodetool status shows
// for Cassandra, for a shardkv cluster.
//
// The map comes from the reachable node with the newest epoch. Rows are the union of the map's
// nodes and the local directory's node-<id> directories (with --cluster, the map's nodes only).
// A node is "up" if it answers a ping within min(--timeout, 2000 ms); pings run in parallel, so
// a hung node costs one timeout, not one per node.
//
// --json prints exactly one object, with this stable schema (fields are never renamed or
// removed; new ones may be added):
//
//   {
//     "cluster_id": "12345678901234567890",  // string: a 64-bit id does not fit a JSON double;
//                                             // null if no node answered
//     "epoch": 1,                              // null if no node answered
//     "mode": "ring" | "jump",                 // null if no node answered
//     "replicas": 3, "write_quorum": 2, "read_quorum": 2,  // effective values; null if unknown
//     "nodes": [                               // ascending id
//       {
//         "id": 1,
//         "address": "127.0.0.1:7000",         // the map's address, else from the directory
//         "state": "up" | "down",              // answered a ping just now
//         "map_state": "up" | "joining" | "leaving" | "down" | null,  // null: not in the map
//         "pid": 4242 | null,                  // from D/node-<id>/pid; null if none
//         "alive": true | false,               // that pid is a live shardkv-node of this node
//         "keys": 1234 | null,                 // the node's stats counter keys_approx (all
//                                              // replicas it stores, approximate); null if down
//         "share_pct": 33.3 | null             // % of the token space it owns as primary under
//                                              // the map (ring: arc lengths / 2^64; jump:
//                                              // primary shards / shards); null if not in map
//       }
//     ],
//     "rebalance": null | {                    // null: no change was ever made, or no node
//                                              // answered the rebalancer's status
//       "change_id": "1234",                   // string (64-bit)
//       "kind": "add" | "remove", "node_id": 4,
//       "state": "streaming" | ...,            // planned|streaming|read_new|new_only|cleanup|
//                                              // done|failed|cancelled (the last change's)
//       "moved_copies": 7800,                  // live while streaming (from the driver)
//       "planned_copies": 15000,
//       "live": true,                          // the numbers came from the driving node
//       "error": ""                            // why it failed
//     }
//   }
//
// `cluster status` (not `cluster up`) also retires a node whose removal is done: see
// RetireRemovedNode in rebalance_client.h.
//
// Exit codes: 0 if some node answered, 3 if none did (the rows are then all "down").
#pragma once

#include <string>

#include "global_options.h"
#include "local_cluster.h"

namespace shardkv::cli {

// Prints the status of the cluster in `dir` (or at --cluster) to stdout, as a table or, with
// g.json, as the JSON object above. With `retire_removed`, first stops the process of a node
// whose removal is done (see RetireRemovedNode). Returns the exit code.
int PrintClusterStatus(const GlobalOptions& g, const std::string& dir, NodeProber* prober,
                       bool retire_removed = false);

}  // namespace shardkv::cli
