#include "membership_commands.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>
#include <thread>

#include "change_begin.h"
#include "change_guard.h"
#include "cli_common.h"
#include "cluster_commands.h"
#include "cluster_limits.h"
#include "cluster_up.h"
#include "local_cluster.h"
#include "plan_printer.h"
#include "rebalance_client.h"
#include "shardkv/stats.h"

namespace shardkv::cli {
namespace {

namespace fs = std::filesystem;

using namespace limits;

void StopAndRemove(const std::string& dir, uint32_t id, pid_t pid) {
  Progress("stopping the new node " + std::to_string(id) + " and removing " + NodeDir(dir, id));
  StopNodes(dir, {{id, pid}}, SIGTERM, SteadyClock::now() + std::chrono::seconds(15), true,
            std::chrono::seconds(5));
  std::error_code ec;
  fs::remove_all(NodeDir(dir, id), ec);
}

int DoAddNode(const GlobalOptions& g, const ChangeFlags& f) {
  if (RefuseUnconfirmable(f)) return kExitUsage;
  // Before any thread starts (see InterruptGuard): from the moment the new node runs, Ctrl-C,
  // SIGTERM, SIGHUP or SIGPIPE clean up as answering `n` does.
  InterruptGuard guard;
  const std::string dir = AbsoluteDir(g.ClusterDir());
  auto conf = ReadClusterConf(dir);
  if (!conf.ok()) {
    return ReportError(conf.status().IsNotFound()
                           ? "no cluster in " + dir + " (start one with 'shardkv cluster up')"
                           : conf.status().message(),
                       conf.status().IsNotFound() ? kExitUnreachable : kExitFailed);
  }
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return ReportError(lock.status(), kExitUsage);
  const std::vector<std::string> addresses = AdminAddresses(g, dir);
  auto map = CurrentMap(g, dir, addresses);
  if (!map.ok()) return ReportError(map.status(), kExitUnreachable);
  uint32_t id = 0;
  for (uint32_t existing : ListAllNodeIds(dir)) id = std::max(id, existing);
  for (const ClusterNode& n : map->nodes()) id = std::max(id, n.id);
  ++id;
  // Before the new node starts: without a majority the change could never begin.
  if (int code = RefuseWithoutMajority(g, *map, "add node " + std::to_string(id));
      code != kExitOk) {
    return code;
  }
  auto port = ChooseNewPort(*conf, dir, id);
  if (!port.ok()) return ReportError(port.status(), kExitFailed);
  auto binary = FindNodeBinary();
  if (!binary.ok()) return ReportError(binary.status(), kExitFailed);
  const std::vector<std::string> args = NewNodeArgs(dir, *conf, id, *port);
  Progress("starting node " + std::to_string(id) + " in " + NodeDir(dir, id));
  // Armed before the launch: a signal while the node starts still removes what was created.
  std::optional<pid_t> launched;
  guard.Arm([&dir, id, &launched] {
    if (launched) {
      StopAndRemove(dir, id, *launched);
    } else {
      std::error_code ec;
      fs::remove_all(NodeDir(dir, id), ec);
    }
  });
  auto pid = LaunchNode(*binary, dir, id, args);
  if (!pid.ok()) {
    guard.UndoNow();
    return ReportError(pid.status().WithContext("node " + std::to_string(id)), kExitFailed);
  }
  launched = *pid;
  NodeProber prober;
  std::vector<uint16_t> bound;
  uint32_t exited_id = 0;
  Status s = WaitListening(
      dir, {{id, *pid}}, SteadyClock::now() + std::chrono::seconds(f.wait_s), &prober,
      [](size_t, size_t) {}, &bound, &exited_id);
  if (!s.ok()) {
    ReportError(s, kExitFailed);
    for (const auto& line : TailLines(NodeDir(dir, id) + "/node.log", 5)) {
      std::fprintf(stderr, "  | %s\n", line.c_str());
    }
    guard.UndoNow();
    return kExitFailed;
  }
  // Pinned, as `cluster up` does: a restart must come back at the address the map names.
  (void)WriteArgsFile(NodeDir(dir, id), WithListenPort(args, bound[0]));
  const std::string address = "127.0.0.1:" + std::to_string(bound[0]);
  Progress("node " + std::to_string(id) + " is up at " + address + " (pid " + std::to_string(*pid) +
           ")");
  ChangeJob c;
  c.kind = ChangeKind::kAdd;
  c.node_id = id;
  c.address = address;
  c.askees = MemberAddresses(*map, {id});
  c.guard = &guard;
  c.majority_checked = true;
  c.map = &*map;
  c.on_begun = [&dir, id, &conf, &binary, &args, &bound] {
    RecordNodeCount(dir);
    // A member now: with a lost data directory it must refuse to start (see WithClusterId).
    (void)WriteArgsFile(NodeDir(dir, id),
                        WithClusterId(WithListenPort(args, bound[0]), conf->cluster_id, *binary));
  };
  return PlanAndBegin(g, f, c);
}

int DoJoin(const GlobalOptions& g, const ChangeFlags& f, const std::string& address) {
  if (RefuseUnconfirmable(f)) return kExitUsage;
  const std::string dir = AbsoluteDir(g.ClusterDir());
  // The joining node is not of this cluster (yet): asked without an expected cluster id.
  const NodeProbe joining = AdminFor(g, dir)->Probe(address, CallTo({}, ProbeTimeout(g)));
  if (!joining.reachable) {
    return ReportError("cannot ask " + address + " for its node id: " + joining.error.message(),
                       kExitUnreachable);
  }
  if (!joining.stats && !joining.error.ok()) {
    // It answered but refused us (a secret or a TLS certificate): say why, exit 3.
    return ReportError("cannot ask " + address + " for its node id: " + joining.error.message(),
                       ExitCodeFor(joining.error));
  }
  int64_t reported_id = 0;
  if (joining.stats) {
    if (auto it = joining.stats->counters.find(std::string(stats::node_id));
        it != joining.stats->counters.end()) {
      reported_id = it->second;
    }
  }
  if (reported_id <= 0 || reported_id > UINT32_MAX) {
    return ReportError(address + " did not report its node id (is it a shardkv-node?)",
                       kExitFailed);
  }
  const auto id = static_cast<uint32_t>(reported_id);
  Progress(address + " is node " + std::to_string(id));
  std::vector<std::string> addresses = AdminAddresses(g, dir);
  addresses.erase(std::remove(addresses.begin(), addresses.end(), address), addresses.end());
  auto map = CurrentMap(g, dir, addresses);
  if (!map.ok()) return ReportError(map.status(), kExitUnreachable);
  if (map->FindNodeByAddress(address) != nullptr) {
    return ReportError(address + " is already a member of the cluster (node " +
                           std::to_string(map->FindNodeByAddress(address)->id) + ")",
                       kExitFailed);
  }
  // Only an unformed node (no map) can join; a member of another cluster, even a one-node one,
  // is refused here, before anything is planned or committed.
  if (const std::optional<ClusterMap>& other = joining.map;
      other && other->cluster_id() != map->cluster_id()) {
    return ReportError(address + " is node " + std::to_string(id) + " of another cluster (" +
                           std::to_string(other->cluster_id()) + ", " +
                           std::to_string(other->nodes().size()) + " nodes, epoch " +
                           std::to_string(other->epoch()) +
                           "), not a fresh node (only an unformed node can join); cluster " +
                           std::to_string(map->cluster_id()) + " is unchanged",
                       kExitFailed);
  }
  ChangeJob c;
  c.map = &*map;
  c.kind = ChangeKind::kAdd;
  c.node_id = id;
  c.address = address;
  c.askees = MemberAddresses(*map, {id});
  return PlanAndBegin(g, f, c);
}

int DoRemoveNode(const GlobalOptions& g, const ChangeFlags& f, uint32_t id) {
  if (RefuseUnconfirmable(f)) return kExitUsage;
  const std::string dir = AbsoluteDir(g.ClusterDir());
  // The leaving node may answer too (it may be the last one); the other nodes first.
  std::vector<std::string> addresses = AdminAddresses(g, dir, {id});
  for (const auto& a : AdminAddresses(g, dir)) {
    if (std::find(addresses.begin(), addresses.end(), a) == addresses.end()) addresses.push_back(a);
  }
  auto map = CurrentMap(g, dir, addresses);
  if (!map.ok()) return ReportError(map.status(), kExitUnreachable);
  if (map->FindNode(id) == nullptr) {
    std::string members;
    for (const ClusterNode& n : map->nodes()) {
      members += (members.empty() ? "" : ", ") + std::to_string(n.id);
    }
    return ReportError(
        "node " + std::to_string(id) + " is not a member of the cluster (members: " + members + ")",
        kExitFailed);
  }
  if (map->nodes().size() == 1) {
    return ReportError("cannot remove the last node (node " + std::to_string(id) +
                           "): a cluster needs at least one; stop the cluster with 'shardkv "
                           "cluster down' instead",
                       kExitUsage);
  }
  ChangeJob c;
  c.map = &*map;
  c.kind = ChangeKind::kRemove;
  c.node_id = id;
  c.askees = MemberAddresses(*map, {id});
  return PlanAndBegin(g, f, c);
}

int DoSetParams(const GlobalOptions& g, const ChangeFlags& f, uint32_t replicas,
                uint32_t write_quorum, uint32_t read_quorum) {
  if (replicas == 0 && write_quorum == 0 && read_quorum == 0) {
    return ReportError("nothing to change: give --replicas, --write-quorum or --read-quorum",
                       kExitUsage);
  }
  if (RefuseUnconfirmable(f)) return kExitUsage;
  const std::string dir = AbsoluteDir(g.ClusterDir());
  auto map = CurrentMap(g, dir, AdminAddresses(g, dir));
  if (!map.ok()) return ReportError(map.status(), kExitUnreachable);
  ChangeJob c;
  c.map = &*map;
  c.kind = ChangeKind::kParams;
  c.replicas = replicas;
  c.write_quorum = write_quorum;
  c.read_quorum = read_quorum;
  c.askees = MemberAddresses(*map, {});
  return PlanAndBegin(g, f, c);
}

}  // namespace

void RegisterMembershipCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  CLI::App* cluster = app.get_subcommand("cluster");

  auto add_flags = std::make_shared<ChangeFlags>();
  auto* add = cluster->add_subcommand(
      "add-node",
      "Start one more shardkv-node in the local cluster directory (next free id, the same "
      "arguments as the others), print the rebalance plan, and on confirmation begin adding it");
  AddChangeFlags(add, g, add_flags.get(), true);
  add->add_option("--wait", add_flags->wait_s, "Seconds to wait for the new node to listen")
      ->capture_default_str()
      ->check(CLI::Range(kMinWaitS, kMaxWaitS));
  add->callback([=] {
    if (RefuseRemote(*g, "cluster add-node", exit_code)) return;
    *exit_code = DoAddNode(*g, *add_flags);
  });

  auto join_flags = std::make_shared<ChangeFlags>();
  auto join_address = std::make_shared<std::string>();
  auto* join = cluster->add_subcommand(
      "join",
      "Add an already running shardkv-node (a fresh one) to the cluster: print the plan, and on "
      "confirmation begin");
  join->add_option("ADDRESS", *join_address, "The node's HOST:PORT")->required();
  AddChangeFlags(join, g, join_flags.get(), true);
  join->callback([=] { *exit_code = DoJoin(*g, *join_flags, *join_address); });

  auto remove_flags = std::make_shared<ChangeFlags>();
  auto remove_id = std::make_shared<uint32_t>(0);
  auto* remove = cluster->add_subcommand(
      "remove-node",
      "Remove a node (running or dead): print the plan, and on confirmation begin streaming its "
      "ranges to the others. Once the change is done, 'rebalance watch' (or 'cluster "
      "retire-node ID') stops the node's process and marks its directory removed");
  remove->add_option("ID", *remove_id, "Node id")
      ->required()
      ->check(CLI::Range(kMinNodeId, kMaxNodeId));
  AddChangeFlags(remove, g, remove_flags.get(), false);
  remove->callback([=] { *exit_code = DoRemoveNode(*g, *remove_flags, *remove_id); });

  auto set_flags = std::make_shared<ChangeFlags>();
  auto set_values = std::make_shared<std::array<uint32_t, 3>>();
  auto* set = cluster->add_subcommand(
      "set",
      "Change the replication factor and quorums of the running cluster: print the plan (the "
      "copies a higher factor streams), and on confirmation begin. It runs through the same "
      "transition as a membership change; follow it with 'rebalance watch'");
  set->add_option("--replicas", (*set_values)[0], "New replication factor (copies of each key)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  set->add_option("--write-quorum", (*set_values)[1],
                  "New write quorum W (acks a write needs; 1..replicas)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  set->add_option("--read-quorum", (*set_values)[2],
                  "New read quorum Q (replicas a read asks; 1..replicas)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  AddChangeFlags(set, g, set_flags.get(), false);
  set->footer(
      "An option left out keeps its value. Example: 'shardkv cluster set --replicas 3 "
      "--write-quorum 2 --read-quorum 2 --yes'");
  set->callback([=] {
    *exit_code = DoSetParams(*g, *set_flags, (*set_values)[0], (*set_values)[1], (*set_values)[2]);
  });
}

}  // namespace shardkv::cli
