// Admin: the one management API of a shardkv cluster. `shardkv cluster ...` and `shardkv
// rebalance ...`, the test harnesses and embedding applications all form clusters and drive
// membership changes through it (design.md "Public API"), as FoundationDB's ManagementAPI backs
// both fdbcli and its tests.
//
// An Admin talks to the nodes in its seed list (AdminOptions::seeds, replaceable with SetSeeds, or
// for one call with AdminCallOptions::seeds), expecting one cluster: AdminOptions::cluster_id, or
// with 0 the id of the first node that answers. Every request carries that id, so a node of another
// cluster (one that took a stopped cluster's ports) refuses it; such a node counts as not
// answering.
//
// Results of the change commands are AdminReply values: `status` is OK, the answering node's
// error, or why no node answered; `unreachable` and `foreign` tell the last two apart from a
// node's refusal. A change command's outcome is never ambiguous (design.md "Rebalancing: the
// transition protocol"): OK means it took effect; an error means nothing did, except a Timeout
// whose message says "outcome unknown"; and when no node answered (unreachable) the request may
// still have reached one. After an error, ResolveOutcome says whether the command took effect
// after all (it polls ChangeStatus until the command's ChangeEffect shows, or a wait ends).
//
// Blocking: every call is synchronous and bounded by AdminOptions::timeout_ms per node asked.
// Plan and Begin count every key of the cluster on the nodes, which takes seconds per million
// keys; they use AdminOptions::plan_timeout_ms. Every call takes AdminCallOptions, which replace
// the seeds and timeouts for that call only.
//
// Thread-safety: an Admin is not shared between threads without external locking (it keeps the
// adopted cluster id and the last driver it heard from). Distinct Admins are independent.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/change.h"
#include "shardkv/change_effect.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/mutation_outcome.h"
#include "shardkv/repair.h"
#include "shardkv/status.h"

namespace shardkv {

struct AdminOptions {
  // host:port of nodes to ask, in order of preference.
  std::vector<std::string> seeds;
  // The cluster every node must belong to; 0: adopt the first answering node's.
  uint64_t cluster_id = 0;
  // Where the expected id came from, for messages ("the cluster in D/cluster.conf").
  std::string cluster_origin;
  uint32_t timeout_ms = 5000;        // per request to one node
  uint32_t plan_timeout_ms = 60000;  // plan and begin (they count keys)
  // Authentication and TLS, as ClientOptions.
  std::string auth_secret_file;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

// The seeds and timeouts of one call, overriding AdminOptions for that call only: an empty
// `seeds` asks AdminOptions::seeds (as last set), a 0 timeout keeps AdminOptions'. The expected
// (or adopted) cluster id holds whatever the seeds. A call that names its node (`address`) asks
// that node and uses `seeds` only where it says so.
struct AdminCallOptions {
  std::vector<std::string> seeds;
  uint32_t timeout_ms = 0;
  uint32_t plan_timeout_ms = 0;
};

// The answer to a change command.
struct AdminReply {
  Status status;
  // No node answered at all: at least one transport failure, and no node of the cluster.
  bool unreachable = false;
  // A node of another cluster answered (and, when no node of the cluster did, that is why).
  bool foreign = false;
  std::string address;  // the node that answered
  ChangeReport report;  // valid when status.ok()
};

// Whether a change command (Begin, SetParams, Cancel, Resume, SetThrottle) took effect, from its
// reply and, when the reply alone does not say, the change status (Admin::ResolveOutcome).
struct ChangeOutcome {
  // kApplied: it took effect (the reply was OK, or the status shows its effect). kNotApplied:
  // nothing changed (refused, never sent, or it could not apply to the change as it was).
  // kIndeterminate: sent, and neither the reply nor the status says; only a later ChangeStatus
  // tells.
  MutationOutcome outcome = MutationOutcome::kIndeterminate;
  // The change as it stands once applied: the reply's report, or the status that showed the
  // effect (then `confirmed` is true: the reply was an error, yet the command took effect).
  std::optional<ChangeReport> report;
  std::string address;  // the node `report` came from (the driver, for a confirmed effect)
  bool confirmed = false;
};

// What one node says about itself, asked without an expected cluster id, so that a node of
// another cluster answers too (and can be shown as such).
struct NodeProbe {
  std::string address;
  bool reachable = false;
  Status error;                   // why it was not reachable
  std::optional<ClusterMap> map;  // the map it holds (any cluster)
  std::optional<NodeStatsSnapshot> stats;
  // The node belongs to no cluster yet (no map, no cluster id): its map fetch is refused with
  // "unformed: ...", or its stats report the counter `formed` = 0. A node of an older release
  // that bootstraps a standalone one-node map is not `unformed`; see FormableNode.
  bool unformed = false;
  // The node's wall clock minus this process's, NTP-style: its stats reply carries its clock
  // (wall_clock_ms), compared with the midpoint of the request's round trip here. The error is
  // at most round_trip_ms / 2 (plus the 1 ms resolution of each clock reading). Unset when the
  // node did not report its clock (an older node, or no stats answer).
  std::optional<int64_t> clock_offset_ms;
  int64_t round_trip_ms = 0;  // of the stats request that measured the offset
};

// Whether the probed node may be made a member of a new cluster (FormCluster, `shardkv cluster
// init`): OK for an unformed node, and for a standalone node (a one-node map) that holds no
// data. Otherwise Unavailable (it did not answer), FailedPrecondition (it belongs to a cluster:
// a map with other nodes, or `formed` = 1; or it holds data: keys_approx or bytes_approx above
// 0), or InvalidArgument (it did not report its node id). The message names the address.
Status FormableNode(const NodeProbe& probe);
// The id the probed node reports (stats counter node_id); 0 when it did not report one.
uint32_t ReportedNodeId(const NodeProbe& probe);

// The cluster as its newest map describes it, and what each member answered.
struct ClusterDescription {
  ClusterMap map;
  std::string map_from;  // the node whose map this is
  struct Member {
    ClusterNode node;      // as in the map
    NodeProbe probe;       // what its address answered
    bool foreign = false;  // it answered with a map of another cluster
  };
  std::vector<Member> members;  // ascending id
};

class Admin {
 public:
  // Validates the options (InvalidArgument for a seed that is no host:port); contacts nothing.
  static StatusOr<std::unique_ptr<Admin>> Create(AdminOptions options);
  ~Admin();
  Admin(const Admin&) = delete;
  Admin& operator=(const Admin&) = delete;

  // The expected cluster id, or the adopted one (0 until a node answered).
  uint64_t cluster_id() const;
  // Replaces the seed list for the calls that follow (the expected or adopted cluster id is
  // kept). For one call, pass AdminCallOptions::seeds instead.
  void SetSeeds(std::vector<std::string> seeds);
  const std::vector<std::string>& seeds() const;
  // Replaces AdminOptions::timeout_ms and plan_timeout_ms (0 keeps a value) for the calls that
  // follow. For one call, pass AdminCallOptions instead.
  void SetTimeouts(uint32_t timeout_ms, uint32_t plan_timeout_ms);

  // ---- Forming a cluster ----

  // Forms a new cluster at epoch 1 from running unformed (or standalone, empty) nodes: builds
  // the map (ClusterMap::Create; its errors come back unchanged) with `cluster_id` (0: a random
  // one) and the first node as claimant, and has every node adopt it. Returns the map.
  // Before anything is installed, every node is probed (in parallel) and the whole formation is
  // refused, with nothing installed, if any node is not FormableNode (its error, naming the
  // node), reports another id than the one given (FailedPrecondition), or if two entries share
  // an id or an address (InvalidArgument). A node that already holds exactly this map (a retry
  // with the same `cluster_id`) counts as formable; a refusal by the checks has reason
  // kNotApplied. After the checks, an error names the node that did not take the map; when nodes
  // before it (or it) may have adopted it already, its reason is kOutcomeUnknown.
  StatusOr<ClusterMap> FormCluster(const std::vector<ClusterNode>& nodes,
                                   const ClusterParams& params, uint64_t cluster_id = 0,
                                   const AdminCallOptions& call = {});

  // ---- Reading ----

  // The newest map (highest epoch) among the seeds of the expected cluster. Unavailable, naming
  // each seed's failure, when none answered with one.
  StatusOr<ClusterMap> NewestMap(const AdminCallOptions& call = {});
  // The newest map, and a probe of every member of it (in parallel).
  StatusOr<ClusterDescription> Describe(const AdminCallOptions& call = {});
  // One node, any cluster: ping, its map and its counters. Never fails; see NodeProbe.
  // Probe and Ping (unlike the other calls) may run concurrently on one Admin: they send no
  // cluster id and so never adopt one.
  NodeProbe Probe(const std::string& address, const AdminCallOptions& call = {});
  // OK when `address` answers a ping (any cluster).
  Status Ping(const std::string& address, const AdminCallOptions& call = {});
  // The map `address` holds, whatever its cluster (one request; Probe sends three).
  StatusOr<ClusterMap> MapOf(const std::string& address, const AdminCallOptions& call = {});
  // One node's counters; the node must belong to the expected cluster.
  StatusOr<NodeStatsSnapshot> NodeStats(const std::string& address,
                                        const AdminCallOptions& call = {});

  // ---- Membership changes ----

  // What `change` would move, counted exactly on the nodes, without committing anything. Asks
  // the seeds in order (a node being removed is never asked: it cannot drive its own removal);
  // the first that answers (with a report or an error) wins. Removing the only node is
  // InvalidArgument ("cannot remove the last node"), as the nodes answer it.
  AdminReply Plan(const ChangeRequest& change, const AdminCallOptions& call = {});
  // Commits the change and returns once it began (state streaming); the driving node then moves
  // it on by itself. `address` non-empty: ask that node (the one that planned), else as Plan.
  // FailedPrecondition while another change runs.
  AdminReply Begin(const ChangeRequest& change, const ChangeThrottle& throttle,
                   const std::string& address = "", const AdminCallOptions& call = {});
  // A change of the replication factor and quorums (`shardkv cluster set`): Begin of a kParams
  // ChangeRequest with these values (0 keeps one). It runs through the same transition as a
  // membership change, streaming the new copies (RF up) or dropping the surplus ones at cleanup
  // (RF down); ChangeStatus and the other change commands follow it like any change.
  AdminReply SetParams(uint32_t replicas, uint32_t write_quorum, uint32_t read_quorum,
                       const ChangeThrottle& throttle, const AdminCallOptions& call = {});
  // The change's status, from its driver when reachable (report.from_driver), else a snapshot
  // from a node's map. `preferred` (or else the last driver heard from) is asked first.
  // report.has_change is false when the cluster never had a change.
  AdminReply ChangeStatus(const std::string& preferred = "", const AdminCallOptions& call = {});
  // Sent to the driver, or with `address` to that node (a node that is not the driver commits
  // the command itself and becomes the driver). Cancel: only while streaming or failed (commits
  // the old placement). Resume: only a failed change (streams again from the checkpoints).
  // SetThrottle: changes the running change's limits; nullopt keeps a limit as it is.
  AdminReply Cancel(const std::string& address = "", const AdminCallOptions& call = {});
  AdminReply Resume(const std::string& address = "", const AdminCallOptions& call = {});
  AdminReply SetThrottle(std::optional<uint64_t> rate_bytes_per_s,
                         std::optional<uint32_t> streams_per_node, const std::string& address = "",
                         const AdminCallOptions& call = {});

  // ---- Resolving an unknown outcome ----

  // Whether the change command that answered `reply` took effect. An OK reply is kApplied; a
  // reply from a node of another cluster, or a command that could not apply to the change as it
  // was (!effect.Possible()), is kNotApplied at once. Otherwise the change status (asked of
  // `call`'s seeds) is polled for up to `wait` until it shows `effect`: kApplied, confirmed.
  // When it never does, ClassifyMutation(reply.status) decides: kIndeterminate for a request
  // that was sent without a definite answer (a timeout, a connection lost in flight, a commit
  // "outcome unknown"), else kNotApplied. `wait` 0 asks the status once.
  ChangeOutcome ResolveOutcome(const AdminReply& reply, const ChangeEffect& effect,
                               std::chrono::milliseconds wait, const AdminCallOptions& call = {});
  // The poll underneath: the first change status (every 250 ms, for up to `wait`) that shows
  // `effect`, and the node it came from; nullopt when none did or no node answered.
  std::optional<AdminReply> AwaitEffect(const ChangeEffect& effect, std::chrono::milliseconds wait,
                                        const AdminCallOptions& call = {});

  // ---- Anti-entropy ----

  // A full repair now (shardkv/repair.h): the replicas of every range in scope compare hash
  // trees and exchange the differing records, newest version wins. Blocks until done; calls
  // `progress` (may be empty) after each slice. Unavailable when no node of the cluster
  // answered (nothing was compared); otherwise the summary, with `complete()` false when some
  // range could not be repaired (a replica failed, a comparing node did not answer).
  StatusOr<RepairSummary> Repair(const RepairOptions& options,
                                 const RepairProgressFn& progress = {},
                                 const AdminCallOptions& call = {});

  // Sum of one counter over the seeds that answer (e.g. "client_errors").
  int64_t SumCounter(const std::string& name, const AdminCallOptions& call = {});

  class Impl;

 private:
  explicit Admin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True when the change ended (done, failed or cancelled: nothing more happens by itself).
bool ChangeEnded(const ChangeReport& report);

}  // namespace shardkv
