// Local node directories that never became members (orphan_nodes.h).
#include "orphan_nodes.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "cluster_commands.h"
#include "cluster_limits.h"
#include "cluster_probe.h"
#include "cluster_up.h"
#include "local_cluster.h"
#include "rebalance_client.h"

namespace shardkv::cli {
namespace {

namespace fs = std::filesystem;

enum class Action { kForget, kRetire };

// `cluster forget-node` and `cluster retire-node`: both act only on a node the map of a majority
// of the other members does not name, since membership is decided by the others (the node itself
// may be unformed or stale).
int DoNonMember(const GlobalOptions& g, uint32_t id, Action action) {
  const std::string dir = AbsoluteDir(g.ClusterDir());
  const std::vector<uint32_t> ids = ListNodeIds(dir);
  if (std::find(ids.begin(), ids.end(), id) == ids.end()) {
    return ReportError("no node " + std::to_string(id) + " in " + dir, kExitUsage);
  }
  const bool forget = action == Action::kForget;
  const std::string node_dir = NodeDir(dir, id);
  const std::string node = "node " + std::to_string(id);
  auto refuse = [&](const std::string& why, int code) {
    return ReportError(std::string(forget ? "not removing " : "not retiring ") + node_dir + ": " +
                           why + "; nothing was changed",
                       code);
  };
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return ReportError(lock.status(), kExitUsage);
  auto conf = ReadClusterConf(dir);
  if (!conf.ok()) return ReportError(conf.status(), kExitFailed);
  if (!conf->formed) {
    return refuse("the cluster in " + dir +
                      " was never formed ('shardkv cluster up' clears the nodes of an unfinished "
                      "start)",
                  kExitUsage);
  }
  const std::string cluster = "cluster " + std::to_string(conf->cluster_id);
  std::vector<std::string> others;
  for (const auto& [other, address] : LocalNodeAddresses(dir, {id})) others.push_back(address);
  NodeProber prober(g.credentials);
  const auto timeout = std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 2000));
  const ClusterView view = AskCluster(conf->cluster_id, others, &prober, timeout);
  if (!view.map) {
    return refuse("no other node of " + cluster + " answers, so whether " + node +
                      " is a member cannot be checked: start the cluster ('shardkv cluster up') "
                      "and run this again",
                  kExitUnreachable);
  }
  if (const ClusterNode* member = view.map->FindNode(id)) {
    return refuse(node + " is a member of " + cluster + " (" +
                      std::string(NodeStateName(member->state)) + " at " + member->address + "); " +
                      (forget ? "forget-node removes only a node that never became one"
                              : "retire-node retires only a node that left") +
                      ": remove a member with 'shardkv cluster remove-node " + std::to_string(id) +
                      "'",
                  kExitUsage);
  }
  const size_t members = view.map->nodes().size();
  if (view.members_answering.size() * 2 <= members) {
    return refuse("only " + std::to_string(view.members_answering.size()) + " of " +
                      std::to_string(members) + " members of " + cluster +
                      " answer, and a newer map than theirs may name " + node +
                      ": start the others and run this again",
                  kExitUnreachable);
  }
  std::string stopped = " (its process was not running)";
  if (auto pid = RunningNodePid(node_dir)) {
    Progress("stopping " + node + " (pid " + std::to_string(*pid) + ")");
    auto out = StopNodes(dir, {{id, *pid}}, SIGTERM, SteadyClock::now() + std::chrono::seconds(20),
                         true, std::chrono::seconds(5));
    if (!out.front().stopped) {
      return refuse(node + " (pid " + std::to_string(*pid) + ") does not exit", kExitFailed);
    }
    stopped = ": stopped its process (pid " + std::to_string(*pid) +
              (out.front().needed_kill ? ", SIGKILL)" : ", SIGTERM)");
  }
  if (!forget) {
    if (Status s = WriteTextFile(RemovedMarkerPath(node_dir), "retired by cluster retire-node\n");
        !s.ok()) {
      return ReportError("cannot mark " + node_dir + " removed: " + s.message(), kExitFailed);
    }
    RecordNodeCount(dir);
    std::printf("%s retired%s and marked %s removed (data kept; every command skips it)\n",
                node.c_str(), stopped.c_str(), node_dir.c_str());
    return kExitOk;
  }
  std::error_code ec;
  fs::remove_all(node_dir, ec);
  if (ec) return ReportError("cannot remove " + node_dir + ": " + ec.message(), kExitFailed);
  std::printf("%s removed: %s deleted (it never became a member of %s)\n", node.c_str(),
              node_dir.c_str(), cluster.c_str());
  return kExitOk;
}

}  // namespace

bool ArgsOfMember(const std::vector<std::string>& args) {
  return std::find(args.begin(), args.end(), "--cluster-id") != args.end();
}

std::set<uint32_t> DirectoriesNotInMap(const ClusterMap& map, const std::string& dir) {
  std::set<uint32_t> out;
  for (uint32_t id : ListNodeIds(dir)) {
    if (map.FindNode(id) == nullptr) out.insert(id);
  }
  return out;
}

std::string NotMemberAdvice(uint32_t id, uint64_t cluster_id) {
  return "the map of cluster " + std::to_string(cluster_id) +
         " does not name it: unless a 'shardkv cluster add-node' is adding it right now, it never "
         "became a member (an interrupted add-node) and holds nothing of the cluster; remove its "
         "directory with "
         "'shardkv cluster forget-node " +
         std::to_string(id) + "'";
}

void RegisterForgetNodeCommand(CLI::App& app, GlobalOptions* g, int* exit_code) {
  CLI::App* cluster = app.get_subcommand("cluster");
  auto id = std::make_shared<uint32_t>(0);
  auto* forget = cluster->add_subcommand(
      "forget-node",
      "Remove the directory of a local node that never became a member of the cluster (left by "
      "an interrupted 'cluster add-node'; 'cluster status' lists it as not-member), stopping "
      "the node if it runs. Refused for a member (use 'cluster remove-node'), and unless a "
      "majority of the members answer");
  forget->add_option("ID", *id, "Node id")
      ->required()
      ->check(CLI::Range(limits::kMinNodeId, limits::kMaxNodeId));
  forget->callback([=] {
    if (RefuseRemote(*g, "cluster forget-node", exit_code)) return;
    *exit_code = DoNonMember(*g, *id, Action::kForget);
  });

  auto retire_id = std::make_shared<uint32_t>(0);
  auto* retire = cluster->add_subcommand(
      "retire-node",
      "Retire the local node that left the cluster (a finished 'cluster remove-node', or an "
      "add-node that was cancelled; 'cluster status' lists it as left): stop its process "
      "(SIGTERM, SIGKILL after 20 s) and mark its directory removed, keeping its data; every "
      "command skips it from then on. 'rebalance watch' does this when the change it watches "
      "ends. Refused for a member, and unless a majority of the members answer");
  retire->add_option("ID", *retire_id, "Node id")
      ->required()
      ->check(CLI::Range(limits::kMinNodeId, limits::kMaxNodeId));
  retire->callback([=] {
    if (RefuseRemote(*g, "cluster retire-node", exit_code)) return;
    *exit_code = DoNonMember(*g, *retire_id, Action::kRetire);
  });
}

std::string LeftNodeAdvice(uint32_t id, uint64_t change_id, bool running) {
  return "the last change (" + std::to_string(change_id) + ") took it out of the cluster" +
         (running ? " and its process still runs" : "") + ": 'shardkv cluster retire-node " +
         std::to_string(id) + "' " + (running ? "stops it and marks" : "marks") +
         " its directory removed (data kept)";
}

}  // namespace shardkv::cli
