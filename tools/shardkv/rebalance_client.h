// The CLI side of the admin API (include/shardkv/admin.h). Shared by
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

// The CLI's use of shardkv::Admin: one Admin per command (so the cluster id adopted from the
// first node holds for the whole command), each call with the addresses and timeout it needs.
// Every request carries the cluster id the client expects, so a node of another cluster (one
// that took a stopped cluster's ports) refuses it (AdminReply::foreign).
class AdminClient {
 public:
  // `cluster_id` 0: adopt the id of the first node that answers (--cluster without an id), then
  // refuse any node with another id for the rest of the command. `origin` says where the
  // expected id came from, for messages ("the cluster in D/cluster.conf").
  // `credentials`: GlobalOptions::credentials.
  explicit AdminClient(uint64_t cluster_id = 0, std::string origin = "",
                       const Credentials& credentials = {});
  uint64_t cluster_id() const { return admin_->cluster_id(); }
  // Asks the first of `askees` that answers.
  AdminReply Plan(const std::vector<std::string>& askees, const ChangeRequest& change,
                  std::chrono::milliseconds timeout);
  // Asks `address` (the node that planned: it drives the change).
  AdminReply Begin(const std::string& address, const ChangeRequest& change,
                   const ChangeThrottle& throttle, std::chrono::milliseconds timeout);
  // The change status, from the driver when it answers; `preferred` first.
  AdminReply Status(const std::vector<std::string>& addresses, const std::string& preferred,
                    std::chrono::milliseconds timeout);
  // Sends `command` to `driver` (the node driving the change, as a status just said).
  AdminReply Steer(const std::string& driver, const SteerCommand& command,
                   std::chrono::milliseconds timeout);
  // The newest map (highest epoch) of the expected cluster among `addresses`.
  StatusOr<ClusterMap> NewestMap(const std::vector<std::string>& addresses,
                                 std::chrono::milliseconds timeout);
  // Sum of the client_errors counter over the nodes of `addresses` that answer.
  int64_t SumClientErrors(const std::vector<std::string>& addresses,
                          std::chrono::milliseconds timeout);
  // One node, any cluster (see shardkv::NodeProbe).
  NodeProbe Probe(const std::string& address, std::chrono::milliseconds timeout);

 private:
  Admin* With(const std::vector<std::string>& seeds, std::chrono::milliseconds timeout);
  std::unique_ptr<Admin> admin_;
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
                                             const ChangeReport& report);

// Number of member node directories in `dir`, written to cluster.conf's `nodes` (so `cluster up`
// restarts a cluster that grew or shrank). Best effort.
void RecordNodeCount(const std::string& dir);

// Copies and bytes the change moved: the live count while the driver streams, else the count the
// change record kept (a failed or cancelled change keeps what it had moved).
uint64_t MovedCopies(const ChangeReport& r);
uint64_t MovedBytes(const ChangeReport& r);

// After a command that changes the cluster (begin, cancel, resume, throttle) got an error or no
// answer, the change status says whether it took effect anyway (a commit can land on the other
// nodes while the node that was asked fails, or its reply is lost). Polls the status for up to
// `wait` until `took_effect` holds; returns the last status that answered with it holding, or
// nullopt when it never did (or no node answered).
std::optional<ChangeReport> AwaitEffect(AdminClient* client,
                                        const std::vector<std::string>& addresses,
                                        const std::function<bool(const ChangeReport&)>& took_effect,
                                        std::chrono::milliseconds wait,
                                        std::chrono::milliseconds timeout);

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
