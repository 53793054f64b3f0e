#include "cluster_commands.h"

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <random>
#include <set>

#include "change_guard.h"
#include "cli_common.h"
#include "cluster_init.h"
#include "cluster_limits.h"
#include "cluster_status.h"
#include "cluster_up.h"
#include "local_cluster.h"
#include "node_rebuild.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {
namespace {

namespace fs = std::filesystem;

using namespace limits;

std::string Dir(const GlobalOptions& g) {
  // Absolute, because the path ends up in each node's args and pid checks and a node may be
  // relaunched from another working directory.
  return AbsoluteDir(g.ClusterDir());
}

// The node directory of `id`, or a usage error naming the nodes that exist.
StatusOr<std::string> ExistingNodeDir(const std::string& dir, uint32_t id) {
  const std::vector<uint32_t> ids = ListNodeIds(dir);
  if (std::find(ids.begin(), ids.end(), id) != ids.end()) return NodeDir(dir, id);
  std::string known;
  for (uint32_t i : ids) known += (known.empty() ? "" : ", ") + std::to_string(i);
  return Status::InvalidArgument(
      "no node " + std::to_string(id) + " in " + dir +
      (known.empty() ? " (no cluster there)" : " (nodes: " + known + ")"));
}

int DoStopNode(const GlobalOptions& g, uint32_t id, bool hard, uint32_t wait_s) {
  const std::string dir = Dir(g);
  auto node_dir = ExistingNodeDir(dir, id);
  if (!node_dir.ok()) return ReportError(node_dir.status(), kExitUsage);
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return ReportError(lock.status(), kExitUsage);
  auto pid = RunningNodePid(*node_dir);
  if (!pid) return ReportError("node " + std::to_string(id) + " is not running", kExitFailed);
  const char* how = hard ? "SIGKILL" : "SIGTERM";
  Progress("sending " + std::string(how) + " to node " + std::to_string(id) + " (pid " +
           std::to_string(*pid) + ")");
  auto out = StopNodes(dir, {{id, *pid}}, hard ? SIGKILL : SIGTERM, DeadlineIn(hard ? 10 : wait_s),
                       false, {});
  if (!out.front().stopped) {
    return ReportError("node " + std::to_string(id) + " (pid " + std::to_string(*pid) +
                           ") did not exit within " + std::to_string(hard ? 10 : wait_s) + " s" +
                           (hard ? "" : "; try --kill"),
                       kExitFailed);
  }
  std::printf("node %u stopped (%s, pid %d)\n", id, how, static_cast<int>(*pid));
  return kExitOk;
}

int DoStartNode(const GlobalOptions& g, uint32_t id, bool rebuild, uint32_t wait_s) {
  // Before any thread starts (InterruptGuard): a signal during a rebuild puts the node back.
  std::optional<InterruptGuard> guard;
  if (rebuild) guard.emplace();
  const std::string dir = Dir(g);
  auto node_dir = ExistingNodeDir(dir, id);
  if (!node_dir.ok()) return ReportError(node_dir.status(), kExitUsage);
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return ReportError(lock.status(), kExitUsage);
  if (auto pid = RunningNodePid(*node_dir)) {
    return ReportError(
        "node " + std::to_string(id) + " is already running (pid " + std::to_string(*pid) + ")",
        kExitUsage);
  }
  if (auto note = FinishInterruptedRebuild(dir, id)) Progress(*note);
  auto conf = ReadClusterConf(dir);
  const uint64_t grace_s = (conf.ok() ? *conf : ClusterConf{}).tombstone_grace_s;
  if (Status s = CheckTombstoneGrace(dir, id, UnixNow(), grace_s); !s.ok() && !rebuild) {
    return ReportError(s, kExitUsage);
  }
  auto args = ReadArgsFile(*node_dir);
  if (!args.ok()) return ReportError(args.status(), kExitFailed);
  // A rebuild is one start, never repeated by a restart (older launchers recorded it); a node
  // whose launch never learned its port comes back on the one it last had.
  *args = WithRecordedPort(WithoutRebuildFlags(std::move(args).value()), *node_dir);
  auto binary = FindNodeBinary();
  if (!binary.ok()) return ReportError(binary.status(), kExitFailed);
  // A member is told its cluster, so that with a lost data directory it refuses to start empty.
  if (conf.ok() && conf->formed) *args = WithClusterId(std::move(*args), conf->cluster_id, *binary);
  if (rebuild) {
    if (!conf.ok()) return ReportError(conf.status(), kExitFailed);
    return RebuildNode(dir, id, *conf, std::move(args).value(), *binary, wait_s,
                       std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 2000)), &*guard);
  }
  if (auto port = ListenPortInArgs(*args); port && *port != 0 && !PortFree(*port)) {
    return ReportError("cannot start node " + std::to_string(id) + ": port " +
                           std::to_string(*port) + " is taken by " + DescribePortHolder(*port),
                       kExitFailed);
  }
  NodeProber prober;
  std::vector<PendingNode> started;
  std::vector<uint16_t> ports;
  uint32_t exited_id = 0;
  Status s =
      LaunchAndWait(*binary, dir, {{id, *args}}, wait_s, &started, &ports, &prober, &exited_id);
  if (!s.ok()) return FailLaunch(s, dir, exited_id, started);
  std::printf("node %u is up at 127.0.0.1:%u (pid %d)\n", id, static_cast<unsigned>(ports[0]),
              static_cast<int>(started[0].pid));
  return kExitOk;
}

int DoDown(const GlobalOptions& g, uint32_t wait_s) {
  const std::string dir = Dir(g);
  if (!fs::is_directory(dir)) {
    std::printf("no cluster in %s\n", dir.c_str());
    return kExitOk;
  }
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return ReportError(lock.status(), kExitUsage);
  const std::vector<PendingNode> running = RunningNodes(dir);
  // Pid files of nodes that died on their own are stale: drop them too.
  for (uint32_t id : ListNodeIds(dir)) {
    const std::string node_dir = NodeDir(dir, id);
    if (ReadPidFile(node_dir) && !RunningNodePid(node_dir)) RemoveFile(node_dir + "/pid");
  }
  if (running.empty()) {
    std::printf("no running nodes in %s\n", dir.c_str());
    return kExitOk;
  }
  Progress("stopping " + std::to_string(running.size()) + " node(s) (SIGTERM, up to " +
           std::to_string(wait_s) + " s)");
  const auto out =
      StopNodes(dir, running, SIGTERM, DeadlineIn(wait_s), true, std::chrono::seconds(10));
  int forced = 0, stuck = 0;
  for (const auto& o : out) {
    if (!o.stopped) {
      ++stuck;
      std::fprintf(stderr, "error: node %u (pid %d) is still running after SIGKILL\n", o.id,
                   static_cast<int>(o.pid));
    } else if (o.needed_kill) {
      ++forced;
      std::fprintf(stderr, "warning: node %u (pid %d) ignored SIGTERM for %u s; killed (SIGKILL)\n",
                   o.id, static_cast<int>(o.pid), wait_s);
    }
  }
  std::printf("stopped %zu node(s) in %s (data kept)%s\n", out.size() - stuck, dir.c_str(),
              forced ? ", some with SIGKILL" : "");
  return (forced || stuck) ? kExitFailed : kExitOk;
}

}  // namespace

bool RefuseRemote(const GlobalOptions& g, const std::string& command, int* exit_code) {
  if (!g.ClusterGiven()) return false;
  *exit_code = ReportError(
      "'" + command +
          "' starts or stops local shardkv-node processes (in --dir) and takes no --cluster; for "
          "nodes on other hosts, start shardkv-node there and use 'shardkv cluster init' or "
          "'shardkv cluster join'",
      kExitUsage);
  return true;
}

void RegisterClusterCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* cluster = app.add_subcommand(
      "cluster",
      "Form a cluster of running nodes anywhere (init), or run a local cluster of shardkv-node "
      "processes (in --dir, default $SHARDKV_DIR, else ~/.shardkv/local)");
  cluster->require_subcommand(1);
  // Subcommands inherit the footer: their --help would otherwise not mention the global flags.
  cluster->footer(
      "Global options go anywhere on the line: --dir DIR (default $SHARDKV_DIR, else "
      "~/.shardkv/local), --timeout MS. Commands talk only to nodes of the cluster recorded in "
      "DIR/cluster.conf. Exit codes: 0 ok, 1 failed, declined, or refused by the cluster (nothing "
      "changed), 2 usage or bad input, refused before anything started (nothing changed), 3 "
      "cluster unreachable, no majority, or a node of another cluster (not applied), 4 sent but "
      "no definite answer: it may or may not have taken effect (check with 'shardkv rebalance "
      "status' or 'cluster status'). With --json, init, add-node, join and remove-node print "
      "\"outcome\": applied, not_applied or indeterminate.");

  RegisterInitCommand(cluster, g, exit_code);

  auto f = std::make_shared<UpFlags>();
  auto* up = cluster->add_subcommand(
      "up",
      "Start N shardkv-node processes on 127.0.0.1, form a cluster (epoch 1), print its "
      "status. On a directory whose cluster was stopped, restarts it with its data (no --nodes "
      "needed). Warns when R, W and Q leave no room for a node failure.");
  up->add_option("--nodes", f->nodes,
                 "Number of nodes (ids 1..N); required for a new cluster, not for a restart")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  up->add_option("--mode", f->mode, "Placement: ring (hash ring) or jump (jump hash + shard map)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ring", "jump"}));
  up->add_option("--replicas", f->replicas, "Replication factor R (default min(3, N))")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  up->add_option("--write-quorum", f->write_quorum, "Write quorum W (default R/2+1)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  up->add_option("--read-quorum", f->read_quorum, "Read quorum Q (default R/2+1)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  up->add_option("--vnodes", f->vnodes, "Ring mode: virtual nodes per node")
      ->capture_default_str()
      ->check(CLI::Range(kMinVnodes, kMaxVnodes));
  up->add_option("--shards", f->shards, "Jump mode: number of shards")
      ->capture_default_str()
      ->check(CLI::Range(kMinShards, kMaxShards));
  up->add_option("--base-port", f->base_port,
                 "Ports P..P+N-1 (default: free ports from 7000 up; 0: any free port)")
      ->check(CLI::Range(kMinBasePort, kMaxBasePort));
  up->add_option("--wait", f->wait_s, "Seconds to wait for the nodes to listen")
      ->capture_default_str()
      ->check(CLI::Range(kMinWaitS, kMaxWaitS));
  // Hidden: tests shorten the grace to seconds (design.md "Storage format").
  up->add_option("--tombstone-grace", f->tombstone_grace_s, "Seconds before tombstones are purged")
      ->check(CLI::Range(kMinTombstoneGraceS, kMaxTombstoneGraceS))
      ->group("");
  up->add_flag("--json", g->json, "Print the final status as JSON (see 'cluster status')");
  up->callback([f, g, exit_code, up] {
    if (RefuseRemote(*g, "cluster up", exit_code)) return;
    for (const char* flag : {"--mode", "--replicas", "--write-quorum", "--read-quorum", "--vnodes",
                             "--shards", "--base-port"}) {
      if (up->count(flag) > 0) f->given.insert(flag);
    }
    *exit_code = DoUp(*g, *f);
  });

  auto* status = cluster->add_subcommand(
      "status",
      "Epoch, mode, quorums, the last change, and one row per node: address, state, pid, "
      "approximate keys, share of all copies (exit 3 if no node of this cluster answers)");
  status->footer(kStatusHelp);
  status->add_flag("--json", g->json, "One JSON object (fields below)");
  status->callback([g, exit_code] {
    NodeProber prober(g->credentials);
    *exit_code = PrintClusterStatus(*g, Dir(*g), &prober);
  });

  auto stop_id = std::make_shared<uint32_t>(0);
  auto stop_kill = std::make_shared<bool>(false);
  auto stop_wait = std::make_shared<uint32_t>(30);
  auto* stop = cluster->add_subcommand(
      "stop-node", "Stop one node (SIGTERM and wait, or SIGKILL with --kill): a fault drill");
  stop->add_option("ID", *stop_id, "Node id")
      ->required()
      ->check(CLI::Range(kMinNodeId, kMaxNodeId));
  stop->add_flag("--kill", *stop_kill, "SIGKILL instead of a graceful SIGTERM");
  stop->add_option("--wait", *stop_wait, "Seconds to wait for a graceful exit")
      ->capture_default_str()
      ->check(CLI::Range(kMinWaitS, kMaxWaitS));
  stop->callback([=] {
    if (RefuseRemote(*g, "cluster stop-node", exit_code)) return;
    *exit_code = DoStopNode(*g, *stop_id, *stop_kill, *stop_wait);
  });

  auto start_id = std::make_shared<uint32_t>(0);
  auto start_rebuild = std::make_shared<bool>(false);
  auto start_wait = std::make_shared<uint32_t>(60);
  auto* start = cluster->add_subcommand(
      "start-node", "Restart a stopped node with its data, address and arguments");
  start->add_option("ID", *start_id, "Node id")
      ->required()
      ->check(CLI::Range(kMinNodeId, kMaxNodeId));
  start->add_flag("--rebuild", *start_rebuild,
                  "Wipe the node's data and re-stream its ranges from the other replicas before it "
                  "serves (for a node whose data was lost, or that was down longer than the "
                  "tombstone grace)");
  start->add_option("--wait", *start_wait, "Seconds to wait for the node to listen")
      ->capture_default_str()
      ->check(CLI::Range(kMinWaitS, kMaxWaitS));
  start->callback([=] {
    if (RefuseRemote(*g, "cluster start-node", exit_code)) return;
    *exit_code = DoStartNode(*g, *start_id, *start_rebuild, *start_wait);
  });

  auto down_wait = std::make_shared<uint32_t>(30);
  auto* down = cluster->add_subcommand(
      "down", "Stop every node (SIGTERM, then SIGKILL after --wait); data and logs are kept");
  down->add_option("--wait", *down_wait, "Seconds to wait for graceful exits before SIGKILL")
      ->capture_default_str()
      ->check(CLI::Range(kMinWaitS, kMaxWaitS));
  down->callback([=] {
    if (RefuseRemote(*g, "cluster down", exit_code)) return;
    *exit_code = DoDown(*g, *down_wait);
  });
}

}  // namespace shardkv::cli
