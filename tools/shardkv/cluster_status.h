// `shardkv cluster status` (also printed at the end of `cluster up`): what nodetool status shows
// for Cassandra, for a shardkv cluster.
//
// The map comes from the reachable node of this cluster (the id in D/cluster.conf; with
// --cluster, the first node that answers) with the newest epoch. Rows are the union of the
// map's nodes and the local directory's node-<id> directories (with --cluster, the map's nodes
// only). Pings run in parallel, so a hung node costs one timeout (min(--timeout, 2000 ms)).
//
// The JSON schema is kStatusHelp below (also printed by `cluster status --help`): fields are
// never renamed or removed; new ones may be added.
//
// `cluster status` changes nothing: a node whose removal is done is shown as `left`, and
// `cluster retire-node` (or the end of `rebalance watch`) retires it (rebalance_client.h).
#pragma once

#include <string>
#include <string_view>

#include "global_options.h"
#include "local_cluster.h"

namespace shardkv::cli {

// The node states, the columns and the JSON fields, for `cluster status --help`.
inline constexpr const char* kStatusHelp = R"(STATE of a node:
  up         answers, and belongs to this cluster
  down       does not answer (PID shows whether its process runs)
  mismatch   answers, but not as this node of this cluster: another cluster id (another
             cluster took the port, or the node lost its data and started afresh), no map of
             this cluster, or another node id. Its requests fail; a node that lost its data
             comes back with 'shardkv cluster start-node ID --rebuild' (problem says whether
             that can run now, and what to do if not)
  disk-full  answers, but its writes fail: no space left on its disk
  disk-error answers, but its storage fails with an I/O error (a read-only or failing disk;
             the line below the table has the error): it coordinates no writes, clients use the
             other nodes, and it recovers by itself once the cause clears
  needs-repair  answers, but refuses replica reads and streams: hints for it expired on another
             node (it was away longer than the tombstone grace), so it may hold values whose
             deletes are purged elsewhere. Rebuild it with 'shardkv cluster start-node ID
             --rebuild'. A down node that needs repair stays "down", with the reason in problem
  unformed   answers, but belongs to no cluster yet (form one with 'cluster init', or 'cluster
             join' it)
  not-member  a node directory in DIR that the cluster map does not name: an interrupted
             'cluster add-node' left it; 'shardkv cluster forget-node ID' removes it
  left       the node the last change removed (or whose add was cancelled), its directory not
             yet retired: 'shardkv cluster retire-node ID' stops it and marks it removed
KEYS is the live keys the node stores (each replica counts its copy; deleted and expired keys
do not count), counted as writes apply; shown as ~12.3k while the node is still counting what it
held at start, or when it is a node of an older release (RocksDB's estimate).
SHARE is the node's share of all copies (each key counted once per replica), as in the plans of
add-node/remove-node.

--json prints one object:
  cluster_id       string (64-bit) of this cluster; null if no node of it answered
  expected_cluster_id  string: the id in DIR/cluster.conf (null with --cluster)
  epoch, mode      the newest map's epoch and "ring"|"jump"; null if unknown
  replicas, write_quorum, read_quorum   effective values; null if unknown
  map_from         address of the node whose map is shown (the answering node); null if none
  nodes[]          ascending id:
    id, address    the map's address, else the directory's
    state          "up"|"down"|"mismatch"|"disk-full"|"disk-error"|"needs-repair"|"unformed"|
                   "not-member"|"left" (above)
    problem        why it is mismatch, disk-full, disk-error, needs repair, not-member or left, and
                   what to do; "" otherwise
    node_cluster_id  string: the cluster id the node answered with; null if down
    map_state      "up"|"joining"|"leaving"|"down" in the map; null if not in it
    pid            from DIR/node-ID/pid; null if none
    alive          that pid is a live shardkv-node of this node
    keys           live keys stored, a copy per replica (null if down or mismatch)
    keys_estimate  true: keys is not yet (or, from an older node, not) an exact count
    disk_full      true while the node's writes fail for lack of space
    share_pct      % of all copies it holds under the map; null if not in the map
    primary_share_pct  % of the token space it owns as primary
   As the node itself reports (each null while it does not answer, or an older node omits it):
    advertised_address  the address it advertises (--advertise, else the one it bound)
    metrics_address  host:port of its metrics listener (--metrics-listen); null without one
    node_state     "unformed", else its own state in the map it holds ("up"|"joining"|
                   "leaving"|"down"), or "not-in-map"
    epoch          the epoch of the map it holds
    map_digest     16 hex digits: ClusterMap::ContentHash of the map it holds; two nodes with
                   one epoch and different digests hold different maps
    clock_offset_ms  its wall clock minus that of the map_from node, in ms: each clock is read
                   from a stats reply and set against the midpoint of that request's round trip
                   (as NTP does), so the error is at most clock_offset_error_ms
    clock_offset_error_ms  bound of that error: half the sum of both round trips, plus 1 ms
    version        the shardkv release it runs
    uptime_s       seconds since it started
    needs_repair   true if it says it needs repair, or an answering node holds a needs-repair
                   mark of it that its last rebuild did not retire
    needs_repair_reason  why ("" if it does not): its own words, else the nodes that marked it
    clock_skew     true while it finds its clock off a majority's (it sends its requests on)
    background_repair  true while background anti-entropy runs on it (false:
                   --no-background-repair)
    repair_period_ms  its background repair period: every range it drives is compared with
                   the other replicas once within it
    last_full_repair_ms  when its last background pass that compared every range (none failed
                   or skipped) completed, Unix ms; 0 if none yet. The table says how long ago
    gc_blocked_ranges  ranges it holds not repaired with every replica for longer than the
                   tombstone grace: their tombstone GC waits (the table's gc: line)
    gc_blocked_by  [ids]: their replicas that are down or need repair ([] if none): bring them
                   back and repair, or remove them
  rebalance        null (no change ever, or no answer) or {change_id (string), kind ("add"|
                   "remove"), node_id, state, moved_copies, planned_copies, live, error}
Exit codes: 0 if a node of this cluster answered, 3 if none did.
With --cluster HOST:PORT[,...] no local directory is read (pid is null, alive false), and a
listed node the map does not name is shown under the id it reports.
Global options: --dir DIR (default $SHARDKV_DIR, else ~/.shardkv/local), --cluster HOST:PORT[,...],
--timeout MS.)";

// Prints the status of the cluster in `dir` (or at --cluster) to stdout, as a table or, with
// g.json, as the JSON object above. It changes nothing (a node that left is shown as "left",
// with the command that retires it). A non-empty `outcome` is the JSON object's first field
// ("outcome": `cluster init` prints the status of the cluster it formed). Returns the exit code.
int PrintClusterStatus(const GlobalOptions& g, const std::string& dir, NodeProber* prober,
                       std::string_view outcome = {});

}  // namespace shardkv::cli
