// The CLI side of the rebalancer's admin protocol (src/rebalance/rebalancer.h): a node answers
// net::AdminRequest{command, args} with an encoded RebalanceReport, or an error. Shared by
// `cluster add-node|join|remove-node`, `rebalance ...` and `cluster status`.
//
// Where requests go: the nodes of --cluster, else the member directories of the local cluster
// directory (node-<id>/ without a `removed` marker). A report with from_driver=false came from a
// node that does not drive the change (no live progress): it is asked again at its
// driver_address.
//
// Thread-safety: AdminClient is not shared between threads.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "net/peer_pool.h"
#include "global_options.h"
#include "net/messages.h"
#include "clustermap/change_record.h"
#include "shardkv/cluster_map.h"
#include "shardkv/status.h"

namespace shardkv::cli {

using AdminArgs = std::map<std::string, std::string>;

// What one admin exchange gave.
struct AdminReply {
  Status status;             // OK, the node's error, or why no node answered
  bool unreachable = false;  // no node answered at all (transport failure), exit 3
  // The node that answered belongs to another cluster (its id is in `status`); exit 3. Such a
  // node counts as not answering: SendFirst and Status skip it.
  bool foreign = false;
  std::string address;  // the node that answered
  rebalance::RebalanceReport report;
};

// Every request carries the cluster id the client expects, so a node of another cluster (one
// that took a stopped cluster's ports) refuses it; the client then confirms the node's id from
// its map and reports "A is node N of cluster Y, not of cluster X" (AdminReply::foreign).
class AdminClient {
 public:
  // `cluster_id` 0: adopt the id of the first node that answers (--cluster without an id), then
  // refuse any node with another id for the rest of the command. `origin` says where the
  // expected id came from, for messages ("the cluster in D/cluster.conf").
  explicit AdminClient(uint64_t cluster_id = 0, std::string origin = "");
  uint64_t cluster_id() const { return cluster_id_; }
  // One request to one node. A transport failure sets `unreachable`; an ErrorResponse does not.
  AdminReply Send(const std::string& address, const std::string& command, const AdminArgs& args,
                  std::chrono::milliseconds timeout);
  // Any request; `unreachable` (may be null) tells a transport failure from a node's error, and
  // `foreign` (may be null) a node of another cluster.
  StatusOr<net::ResponseBody> Call(const std::string& address, net::RequestBody body,
                                   std::chrono::milliseconds timeout, bool* unreachable = nullptr,
                                   bool* foreign = nullptr);
  // The same without any cluster id: for a node that is not a member yet (`cluster join`).
  StatusOr<net::ResponseBody> CallAnyCluster(const std::string& address, net::RequestBody body,
                                             std::chrono::milliseconds timeout,
                                             bool* unreachable = nullptr);
  // Sends to the first of `addresses` that answers (an error reply counts as an answer).
  AdminReply SendFirst(const std::vector<std::string>& addresses, const std::string& command,
                       const AdminArgs& args, std::chrono::milliseconds timeout);
  // "status", following the driver: asks `preferred` (if set) then each of `addresses` until one
  // answers, then re-asks the driver if that answer was not the driver's. The driver's answer
  // wins; if the driver cannot be reached the first answer is returned.
  AdminReply Status(const std::vector<std::string>& addresses, const std::string& preferred,
                    std::chrono::milliseconds timeout);
  // Sends `command` to the node driving the change (found with Status()).
  AdminReply SendToDriver(const std::vector<std::string>& addresses, const std::string& command,
                          const AdminArgs& args, std::chrono::milliseconds timeout);
  // The newest map (highest epoch) among `addresses`; with `cluster_id` != 0 only maps of that
  // cluster count. Unavailable if none answered.
  StatusOr<ClusterMap> NewestMap(const std::vector<std::string>& addresses, uint64_t cluster_id,
                                 std::chrono::milliseconds timeout);
  // Sum of the client_errors counter over the nodes of `addresses` that answer.
  int64_t SumClientErrors(const std::vector<std::string>& addresses,
                          std::chrono::milliseconds timeout);

 private:
  // The cluster id in `address`'s map (asked without an expected id); nullopt if unknown.
  std::optional<uint64_t> ClusterIdOf(const std::string& address, std::chrono::milliseconds timeout,
                                      bool* unreachable = nullptr);

  std::unique_ptr<PeerPool> pool_;
  uint64_t cluster_id_ = 0;
  std::string origin_;
};

// An AdminClient expecting the cluster of --dir (the id in cluster.conf), or with --cluster the
// first node's.
AdminClient ClientFor(const GlobalOptions& g, const std::string& dir);

// Addresses to send admin requests to: --cluster, else the member directories of `dir` (the
// port the node wrote, else its --listen port), skipping the ids in `exclude`. Ascending id.
std::vector<std::string> AdminAddresses(const GlobalOptions& g, const std::string& dir,
                                        const std::set<uint32_t>& exclude = {});
// The cluster id recorded in `dir`'s cluster.conf (0 with --cluster or without a file).
uint64_t DirClusterId(const GlobalOptions& g, const std::string& dir);

// The members of `map` to ask for a plan/begin: every node except `exclude`, ascending id,
// nodes in state up first.
std::vector<std::string> MemberAddresses(const ClusterMap& map, const std::set<uint32_t>& exclude);

// Once a remove is done, the removed node of the local cluster must go, and so must the node of a
// cancelled add (it never joined): when `report`'s change is one of those and `dir` holds that
// node's directory without the `removed` marker, stops its
// process (SIGTERM, SIGKILL after 20 s), writes the marker and updates cluster.conf's node count.
// Takes the directory lock; skips (nullopt) when another launcher holds it. Returns a line for
// the user when it did something. Nothing with --cluster.
std::optional<std::string> RetireRemovedNode(const GlobalOptions& g, const std::string& dir,
                                             const rebalance::RebalanceReport& report);

// Number of member node directories in `dir`, written to cluster.conf's `nodes` (so `cluster up`
// restarts a cluster that grew or shrank). Best effort.
void RecordNodeCount(const std::string& dir);

// Copies and bytes the change moved: the live count while the driver streams, else the count the
// change record kept (a failed or cancelled change keeps what it had moved).
uint64_t MovedCopies(const rebalance::RebalanceReport& r);
uint64_t MovedBytes(const rebalance::RebalanceReport& r);

// After a command that changes the cluster (begin, cancel, resume, throttle) got an error or no
// answer, the change status says whether it took effect anyway (a commit can land on the other
// nodes while the node that was asked fails, or its reply is lost). Polls the status for up to
// `wait` until `took_effect` holds; returns the last status that answered with it holding, or
// nullopt when it never did (or no node answered).
std::optional<rebalance::RebalanceReport> AwaitEffect(
    AdminClient* client, const std::vector<std::string>& addresses,
    const std::function<bool(const rebalance::RebalanceReport&)>& took_effect,
    std::chrono::milliseconds wait, std::chrono::milliseconds timeout);

// "4.2 MB", "812 KB", "17 B".
std::string HumanBytes(double bytes);
// "1m05s", "42s", "3.2s".
std::string HumanSeconds(double seconds);
// "add node 4" / "remove node 2".
std::string DescribeChange(const rebalance::ChangeRecord& r);
// The change's state as reported ("none" when there was never a change).
std::string StateName(const rebalance::RebalanceReport& r);
// True when the change ended (done, failed or cancelled: nothing more will happen by itself).
bool ChangeEnded(const rebalance::RebalanceReport& r);

}  // namespace shardkv::cli
