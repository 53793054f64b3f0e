// The CLI side of the admin API (include/shardkv/admin.h): which nodes to ask, and what to tell
// the user. Shared by `cluster add-node|join|remove-node`, `rebalance ...` and `cluster status`.
//
// Where requests go: the nodes of --cluster, else the member directories of the local cluster
// directory (node-<id>/ without a `removed` marker). A report with from_driver=false came from a
// node that does not drive the change (no live progress): it is asked again at its
// driver_address.
//
// Thread-safety: an Admin of AdminFor is not shared between threads.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "global_options.h"
#include "shardkv/admin.h"
#include "shardkv/change.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::cli {

// cancel, resume or throttle (a change that already runs, sent to its driver).
struct SteerCommand {
  enum class Kind { kCancel, kResume, kThrottle };
  explicit SteerCommand(Kind k) : kind(k) {}
  Kind kind;
  std::optional<uint64_t> rate_bytes_per_s;  // throttle
  std::optional<uint32_t> streams_per_node;  // throttle
  std::string Name() const;
};

// The Admin of one command, expecting the cluster of --dir (the id in cluster.conf), the
// --cluster-id given, or with --cluster the first node's. One Admin per command, so the id
// adopted from the first node that answers holds for the whole command; every request carries
// it, so a node of another cluster (one that took a stopped cluster's ports) refuses it
// (AdminReply::foreign). Each call names its nodes and timeout (CallTo). Exits (2) when a TLS or
// secret file cannot be used.
std::unique_ptr<Admin> AdminFor(const GlobalOptions& g, const std::string& dir);

// One call's nodes and timeout (also its plan timeout: the CLI gives each call the time it needs).
AdminCallOptions CallTo(const std::vector<std::string>& seeds, std::chrono::milliseconds timeout);

// Sends `command` to `driver` (the node driving the change, as a status just said).
AdminReply Steer(Admin* admin, const std::string& driver, const SteerCommand& command,
                 std::chrono::milliseconds timeout);
// What `command` shows in the change status once it took effect, `before` being the status it
// was sent after (Admin::ResolveOutcome).
ChangeEffect EffectOf(const SteerCommand& command, const ChangeReport& before);

// Addresses to send admin requests to: --cluster, else the member directories of `dir` (the
// port the node wrote, else its --listen port), skipping the ids in `exclude`. Ascending id.
std::vector<std::string> AdminAddresses(const GlobalOptions& g, const std::string& dir,
                                        const std::set<uint32_t>& exclude = {});
// The cluster id recorded in `dir`'s cluster.conf (0 with --cluster or without a file).
uint64_t DirClusterId(const GlobalOptions& g, const std::string& dir);

// The members of `map` to ask for a plan/begin: every node except `exclude`, ascending id,
// nodes in state up first.
std::vector<std::string> MemberAddresses(const ClusterMap& map, const std::set<uint32_t>& exclude);

// The node `report`'s change took out of the cluster: the removed node of a done remove, or the
// node of a cancelled add (it never joined); nullopt for any other change.
std::optional<uint32_t> NodeThatLeft(const ChangeReport& report);

// Once a remove is done, the removed node of the local cluster must go, and so must the node of a
// cancelled add (it never joined): when `report`'s change is one of those and `dir` holds that
// node's directory without the `removed` marker, stops its
// process (SIGTERM, SIGKILL after 20 s), writes the marker and updates cluster.conf's node count.
// Takes the directory lock; skips (nullopt) when another launcher holds it. Returns a line for
// the user when it did something. Nothing with --cluster. Called at the end of `rebalance watch`
// (which says so); `cluster retire-node` does the same on request.
std::optional<std::string> RetireRemovedNode(const GlobalOptions& g, const std::string& dir,
                                             const ChangeReport& report);

// Number of member node directories in `dir`, written to cluster.conf's `nodes` (so `cluster up`
// restarts a cluster that grew or shrank). Best effort.
void RecordNodeCount(const std::string& dir);

// Copies and bytes the change moved: the live count while the driver streams, else the count the
// change record kept (a failed or cancelled change keeps what it had moved).
uint64_t MovedCopies(const ChangeReport& r);
uint64_t MovedBytes(const ChangeReport& r);

// The address of the node driving the change `r` reports (r.driver): its own address as the
// report or `map` names it, not that of the node that answered (`answered`, the last resort).
std::string DriverAddress(const ChangeReport& r, const ClusterMap* map,
                          const std::string& answered);

// "4.2 MB", "812 KB", "17 B".
std::string HumanBytes(double bytes);
// "1m05s", "42s", "3.2s".
std::string HumanSeconds(double seconds);
// "add node 4" / "remove node 2".
std::string DescribeChange(const ChangeRecord& r);
// The change's state as reported ("none" when there was never a change).
std::string StateName(const ChangeReport& r);

}  // namespace shardkv::cli
