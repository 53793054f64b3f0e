#include "cluster_up.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>

#include "cli_common.h"
#include "cluster_probe.h"
#include "cluster_status.h"
#include "node_rebuild.h"
#include "orphan_nodes.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {

namespace fs = std::filesystem;

void Progress(const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); }

SteadyClock::time_point DeadlineIn(uint32_t seconds) {
  return SteadyClock::now() + std::chrono::seconds(seconds);
}

namespace {

// "90 s", "12 min", "5 h", "11 d": for messages about how long a node was down.
std::string HumanDuration(uint64_t seconds) {
  if (seconds < 120) return std::to_string(seconds) + " s";
  if (seconds < 2 * 3600) return std::to_string(seconds / 60) + " min";
  if (seconds < 2 * 86400) return std::to_string(seconds / 3600) + " h";
  return std::to_string(seconds / 86400) + " d";
}

}  // namespace

// Only a stop recorded by the launcher (stopped_at) is known; a node killed behind the
// launcher's back has no reliable last-seen time and is let through.
Status CheckTombstoneGrace(const std::string& dir, uint32_t id, int64_t reference,
                           uint64_t grace_s) {
  auto stopped = ReadStoppedAt(NodeDir(dir, id));
  if (!stopped || reference <= *stopped) return Status::OK();
  const int64_t down_s = reference - *stopped;
  if (static_cast<uint64_t>(down_s) <= grace_s) return Status::OK();
  return Status::FailedPrecondition(
      "node " + std::to_string(id) + " has been down " + HumanDuration(down_s) +
      ", longer than the tombstone grace (" + HumanDuration(grace_s) +
      "): its data could resurrect deleted keys, so it must be rebuilt with 'shardkv cluster "
      "start-node " +
      std::to_string(id) + " --rebuild'");
}

namespace {

// Stops nodes this invocation started after a failed `up`, so nothing is left half-running.
void StopStarted(const std::string& dir, const std::vector<PendingNode>& started) {
  if (started.empty()) return;
  Progress("stopping the " + std::to_string(started.size()) + " node(s) started");
  StopNodes(dir, started, SIGTERM, DeadlineIn(10), true, std::chrono::seconds(5));
}

}  // namespace

Status LaunchAndWait(const std::string& binary, const std::string& dir,
                     const std::vector<std::pair<uint32_t, std::vector<std::string>>>& launches,
                     uint32_t wait_s, std::vector<PendingNode>* started,
                     std::vector<uint16_t>* ports, NodeProber* prober, uint32_t* exited_id) {
  for (const auto& [id, args] : launches) {
    auto pid = LaunchNode(binary, dir, id, args);
    if (!pid.ok()) return pid.status().WithContext("node " + std::to_string(id));
    started->push_back({id, *pid});
  }
  Progress("waiting for " + std::to_string(started->size()) + " node(s) to listen (up to " +
           std::to_string(wait_s) + " s)");
  return WaitListening(
      dir, *started, DeadlineIn(wait_s), prober,
      [](size_t ready, size_t total) {
        Progress("  " + std::to_string(ready) + "/" + std::to_string(total) + " listening");
      },
      ports, exited_id);
}

int FailLaunch(const Status& s, const std::string& dir, uint32_t exited_id,
               const std::vector<PendingNode>& started) {
  ReportError(s, kExitFailed);
  if (exited_id != 0) {
    for (const auto& line : TailLines(NodeDir(dir, exited_id) + "/node.log", 5)) {
      std::fprintf(stderr, "  | %s\n", line.c_str());
    }
    bool wants_rebuild = false;
    for (const PendingNode& n : started) {
      wants_rebuild =
          wants_rebuild || (n.id == exited_id && ExitStatusOf(n.pid) == kNodeExitNeedsRebuild);
    }
    if (wants_rebuild) {
      // The node refused to start as an empty node of a cluster it is a member of (its data
      // directory was lost or replaced): only a rebuild from its replicas brings it back.
      std::fprintf(stderr,
                   "node %u has no data of this cluster; rebuild it from its replicas with "
                   "'shardkv cluster start-node %u --rebuild'\n",
                   exited_id, exited_id);
    }
  }
  StopStarted(dir, started);
  return kExitFailed;
}

std::string FailureToleranceWarning(uint32_t nodes, uint32_t replicas, uint32_t write_quorum,
                                    uint32_t read_quorum) {
  if (replicas > write_quorum && replicas > read_quorum) return "";
  std::string what = write_quorum >= replicas && read_quorum >= replicas ? "writes and reads"
                     : write_quorum >= replicas                          ? "writes"
                                                                         : "reads";
  return "warning: with " + std::to_string(nodes) + " node(s), R=" + std::to_string(replicas) +
         " W=" + std::to_string(write_quorum) + " Q=" + std::to_string(read_quorum) +
         " the cluster tolerates no node failure: while any node is down, " + what +
         " of its keys fail" +
         (nodes < 3 ? " (3 nodes tolerate one)"
                    : " (lower --write-quorum/--read-quorum, or raise --replicas)");
}

namespace {

using Launches = std::vector<std::pair<uint32_t, std::vector<std::string>>>;

// What keeps stopped node `id` from restarting with `args`: down past the tombstone grace, or its
// port taken. Exit 2 like every refusal made before anything started: the user must act.
Status CheckRestart(const std::string& dir, uint32_t id, const std::vector<std::string>& args,
                    int64_t reference, const ClusterConf& conf) {
  SHARDKV_RETURN_IF_ERROR(CheckTombstoneGrace(dir, id, reference, conf.tombstone_grace_s));
  auto port = ListenPortInArgs(args);
  if (port && *port != 0 && !PortFree(*port)) {
    return Status::FailedPrecondition(
        "cannot restart the cluster of " + dir + " (cluster " + std::to_string(conf.cluster_id) +
        "): port " + std::to_string(*port) + " of node " + std::to_string(id) + " is taken by " +
        DescribePortHolder(*port) +
        "; stop that process (another cluster's nodes stop with 'shardkv cluster down --dir "
        "THEIR_DIR') and run 'cluster up' again");
  }
  return Status::OK();
}

// `cluster up` on a directory whose cluster was stopped: bring the same nodes back with their
// data (like `ccm start`), rather than refusing or wiping anything.
int RestartStopped(const GlobalOptions& g, const UpFlags& f, const std::string& dir,
                   const ClusterConf& conf) {
  // Placement flags describe a new cluster; a restart keeps the recorded ones, so any given
  // flag (or another node count) contradicts what the directory holds.
  // --nodes is not needed (the directory knows its nodes), but a different count contradicts it.
  if ((f.nodes != 0 && f.nodes != conf.nodes) || !f.given.empty()) {
    return ReportError(dir + " holds a stopped " + std::to_string(conf.nodes) + "-node " +
                           conf.mode +
                           " cluster; 'shardkv cluster up' (without --nodes or placement flags) "
                           "restarts it with its data, or remove the directory to create a new "
                           "cluster",
                       kExitUsage);
  }
  auto binary = FindNodeBinary();
  if (!binary.ok()) return ReportError(binary.status(), kExitFailed);
  const std::vector<uint32_t> ids = ListNodeIds(dir);
  for (uint32_t id : ids) {
    if (auto note = FinishInterruptedRebuild(dir, id)) Progress(*note);
  }
  int64_t reference = 0;  // when the cluster last had a node running
  for (uint32_t id : ids) {
    reference = std::max(reference, ReadStoppedAt(NodeDir(dir, id)).value_or(0));
  }
  // A node whose args carry no cluster id may never have become a member (an interrupted
  // add-node): it starts only once the live map, asked of the others, names it.
  Launches members, unsure;
  for (uint32_t id : ids) {
    auto args = ReadArgsFile(NodeDir(dir, id));
    if (!args.ok()) return ReportError(args.status(), kExitFailed);
    // A rebuild is one start, never repeated (older launchers recorded it); a node whose launch
    // never learned its port comes back on the one it last had.
    *args = WithRecordedPort(WithoutRebuildFlags(std::move(args).value()), NodeDir(dir, id));
    const bool sure = ArgsOfMember(*args) || !NodeSupportsClusterId(*binary);
    (sure ? members : unsure).emplace_back(id, std::move(args).value());
  }
  // Launched before the cluster id was recorded in args (an older launcher): all are members.
  if (members.empty()) std::swap(members, unsure);
  for (auto& [id, args] : members) {
    Status s = CheckRestart(dir, id, args, reference, conf);
    if (!s.ok()) return ReportError(s, kExitUsage);
    // Nodes launched before the cluster id was recorded in their args get it now.
    args = WithClusterId(std::move(args), conf.cluster_id, *binary);
    (void)WriteArgsFile(NodeDir(dir, id), args);
  }
  Progress("restarting the stopped " + std::to_string(ids.size()) + "-node cluster in " + dir +
           " with its data (remove the directory for a fresh cluster)");
  NodeProber prober;
  std::vector<PendingNode> started;
  std::vector<uint16_t> ports;
  uint32_t exited_id = 0;
  Status s = LaunchAndWait(*binary, dir, members, f.wait_s, &started, &ports, &prober, &exited_id);
  if (!s.ok()) return FailLaunch(s, dir, exited_id, started);
  if (!unsure.empty()) {
    std::vector<std::string> addresses;
    for (uint16_t port : ports) addresses.push_back("127.0.0.1:" + std::to_string(port));
    const ClusterView view =
        AskCluster(conf.cluster_id, addresses, &prober,
                   std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 2000)));
    Launches late;
    for (auto& [id, args] : unsure) {
      if (view.map && view.map->FindNode(id) == nullptr) {
        std::fprintf(stderr, "node %u not started: %s\n", id,
                     NotMemberAdvice(id, conf.cluster_id).c_str());
        continue;
      }
      s = CheckRestart(dir, id, args, reference, conf);
      if (!s.ok()) return FailLaunch(s, dir, 0, started);
      args = WithClusterId(std::move(args), conf.cluster_id, *binary);
      (void)WriteArgsFile(NodeDir(dir, id), args);
      late.emplace_back(id, std::move(args));
    }
    if (!late.empty()) {
      s = LaunchAndWait(*binary, dir, late, f.wait_s, &started, &ports, &prober, &exited_id);
      if (!s.ok()) return FailLaunch(s, dir, exited_id, started);
    }
  }
  return PrintClusterStatus(g, dir, &prober);
}

}  // namespace

namespace {

// Validates the flags against each other; fills the defaults.
Status ResolveUpFlags(UpFlags* f) {
  if (f->nodes == 0) {
    return Status::InvalidArgument(
        "--nodes is required to create a cluster (a stopped one in "
        "--dir restarts without it)");
  }
  if (f->replicas == 0) f->replicas = std::min<uint32_t>(3, f->nodes);
  if (f->replicas > f->nodes) {
    return Status::InvalidArgument("--replicas " + std::to_string(f->replicas) +
                                   " exceeds --nodes " + std::to_string(f->nodes));
  }
  if (f->write_quorum == 0) f->write_quorum = f->replicas / 2 + 1;
  if (f->read_quorum == 0) f->read_quorum = f->replicas / 2 + 1;
  if (f->write_quorum > f->replicas || f->read_quorum > f->replicas) {
    return Status::InvalidArgument("--write-quorum and --read-quorum must be between 1 and " +
                                   std::string("--replicas (") + std::to_string(f->replicas) + ")");
  }
  if (f->base_port > 0 && f->base_port + static_cast<int>(f->nodes) - 1 > 65535) {
    return Status::InvalidArgument("--base-port " + std::to_string(f->base_port) +
                                   " leaves no room for " + std::to_string(f->nodes) + " ports");
  }
  return Status::OK();
}

StatusOr<ClusterMap> BuildMap(const UpFlags& f, uint64_t cluster_id,
                              const std::vector<uint16_t>& ports) {
  auto mode = ParsePlacementMode(f.mode);
  if (!mode.ok()) return mode.status();
  ClusterParams params{*mode, f.vnodes, f.shards, f.replicas, f.write_quorum, f.read_quorum};
  std::vector<ClusterNode> nodes;
  for (uint32_t i = 0; i < f.nodes; ++i) {
    nodes.push_back({i + 1, "127.0.0.1:" + std::to_string(ports[i]), 1.0, NodeState::kUp});
  }
  return ClusterMap::Create(cluster_id, params, std::move(nodes), /*claimant=*/1);
}

// The ports to listen on: P..P+N-1 for --base-port P (all must be free), 0s for --base-port 0,
// else the first N free ports from 7000 up.
StatusOr<std::vector<uint16_t>> ChoosePorts(const UpFlags& f) {
  std::vector<uint16_t> ports;
  if (f.base_port == 0) return std::vector<uint16_t>(f.nodes, 0);
  if (f.base_port > 0) {
    for (uint32_t i = 0; i < f.nodes; ++i) {
      const auto port = static_cast<uint16_t>(f.base_port + static_cast<int>(i));
      if (!PortFree(port)) {
        return Status::InvalidArgument("port " + std::to_string(port) +
                                       " is taken; choose another --base-port (0 = any free)");
      }
      ports.push_back(port);
    }
    return ports;
  }
  for (uint32_t p = limits::kFirstDefaultPort; p <= 65535 && ports.size() < f.nodes; ++p) {
    if (PortFree(static_cast<uint16_t>(p))) ports.push_back(static_cast<uint16_t>(p));
  }
  if (ports.size() < f.nodes)
    return Status::ResourceExhausted("not enough free ports from 7000 up");
  return ports;
}

// Has every node adopt the epoch-1 map (Admin::FormCluster builds the same map: claimant 1).
Status FormCluster(const ClusterMap& map, NodeProber* prober, std::chrono::milliseconds timeout) {
  AdminCallOptions call;
  call.timeout_ms = static_cast<uint32_t>(std::max<int64_t>(1, timeout.count()));
  auto formed = prober->admin()->FormCluster(map.nodes(), map.params(), map.cluster_id(), call);
  return formed.ok() ? Status::OK() : formed.status();
}

}  // namespace

int DoUp(const GlobalOptions& g, UpFlags f) {
  // Absolute, because the path ends up in each node's args and pid checks and a node may be
  // relaunched from another working directory.
  const std::string dir = AbsoluteDir(g.ClusterDir());
  // Flags are checked whenever they describe a cluster (--nodes given), also on a directory that
  // holds one; a bare `up` restarts the stopped cluster and needs none.
  if (auto known = ReadClusterConf(dir); f.nodes != 0 || !(known.ok() && known->formed)) {
    Status valid = ResolveUpFlags(&f);
    if (!valid.ok()) return ReportError(valid, kExitUsage);
    // A dry run with placeholder addresses catches every parameter the map rejects (vnodes,
    // shards, quorums) before any process is started.
    std::vector<uint16_t> placeholder(f.nodes);
    for (uint32_t i = 0; i < f.nodes; ++i) placeholder[i] = static_cast<uint16_t>(i + 1);
    if (auto dry = BuildMap(f, 1, placeholder); !dry.ok()) {
      return ReportError(dry.status(), kExitUsage);
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return ReportError("cannot create " + dir + ": " + ec.message(), kExitFailed);
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return ReportError(lock.status(), kExitUsage);

  if (auto running = RunningNodes(dir); !running.empty()) {
    return ReportError(dir + " already holds a running cluster (node " +
                           std::to_string(running.front().id) + ", pid " +
                           std::to_string(running.front().pid) +
                           "); stop it with 'shardkv cluster down' or choose another --dir",
                       kExitUsage);
  }
  auto conf = ReadClusterConf(dir);
  if (conf.ok() && conf->formed) return RestartStopped(g, f, dir, *conf);
  if (conf.ok()) {
    // A previous `up` failed before the cluster formed: its node directories hold nothing a
    // client ever wrote, so they are cleared rather than blocking every later `up`.
    Progress("clearing the leftovers of an unfinished 'cluster up' in " + dir);
    for (uint32_t id : ListAllNodeIds(dir)) fs::remove_all(NodeDir(dir, id), ec);
  } else if (!conf.status().IsNotFound()) {
    return ReportError(conf.status(), kExitFailed);
  } else if (!ListAllNodeIds(dir).empty()) {
    return ReportError(dir +
                           " holds node directories but no cluster.conf; remove them or "
                           "choose another --dir",
                       kExitUsage);
  }

  auto ports = ChoosePorts(f);
  if (!ports.ok()) return ReportError(ports.status(), ExitCodeFor(ports.status()));
  auto binary = FindNodeBinary();
  if (!binary.ok()) return ReportError(binary.status(), kExitFailed);

  std::random_device rd;
  uint64_t cluster_id = 0;
  while (cluster_id == 0) cluster_id = (uint64_t{rd()} << 32) | rd();
  ClusterConf c{f.nodes,       f.mode,   f.replicas, f.write_quorum,
                f.read_quorum, f.vnodes, f.shards,   f.tombstone_grace_s,
                cluster_id,    false,    f.base_port};
  if (Status s = WriteClusterConf(dir, c); !s.ok()) return ReportError(s, kExitFailed);

  std::vector<std::pair<uint32_t, std::vector<std::string>>> launches;
  for (uint32_t id = 1; id <= f.nodes; ++id) {
    launches.emplace_back(
        id, std::vector<std::string>{"--id", std::to_string(id), "--data", NodeDir(dir, id),
                                     "--listen", "127.0.0.1:" + std::to_string((*ports)[id - 1]),
                                     // A Redis listener and a metrics listener on free
                                     // ports (DATA/redis_port, DATA/metrics_port), written
                                     // before the port file the launch waits for. FLUSHDB
                                     // is allowed: a local cluster is a scratch one.
                                     "--redis-listen", "127.0.0.1:0", "--redis-allow-flush",
                                     "--metrics-listen", "127.0.0.1:0", "--tombstone-grace",
                                     std::to_string(f.tombstone_grace_s)});
  }
  Progress("starting " + std::to_string(f.nodes) + " shardkv-node process(es) in " + dir + " (" +
           *binary + ")");
  NodeProber prober;
  std::vector<PendingNode> started;
  std::vector<uint16_t> bound;
  uint32_t exited_id = 0;
  Status s = LaunchAndWait(*binary, dir, launches, f.wait_s, &started, &bound, &prober, &exited_id);
  if (!s.ok()) return FailLaunch(s, dir, exited_id, started);
  // Pin the bound port in the recorded args: a node restarted by start-node must come back at
  // the address the cluster map names, even if it was first started on an ephemeral port.
  for (size_t i = 0; i < launches.size(); ++i) {
    (void)WriteArgsFile(NodeDir(dir, launches[i].first),
                        WithListenPort(launches[i].second, bound[i]));
  }
  auto map = BuildMap(f, cluster_id, bound);
  if (map.ok()) {
    Progress("forming the cluster: epoch 1, " + f.mode + " mode, R=" + std::to_string(f.replicas) +
             " W=" + std::to_string(f.write_quorum) + " Q=" + std::to_string(f.read_quorum));
    s = FormCluster(*map, &prober, std::chrono::milliseconds(g.timeout_ms));
  } else {
    s = map.status();
  }
  if (!s.ok()) return FailLaunch(s, dir, 0, started);
  c.formed = true;
  if (Status w = WriteClusterConf(dir, c); !w.ok()) return ReportError(w, kExitFailed);
  // From now on each node is a member: if its data directory is ever lost, it must refuse to
  // start as a fresh node (it takes effect at the node's next start).
  for (size_t i = 0; i < launches.size(); ++i) {
    (void)WriteArgsFile(
        NodeDir(dir, launches[i].first),
        WithClusterId(WithListenPort(launches[i].second, bound[i]), cluster_id, *binary));
  }
  const int rc = PrintClusterStatus(g, dir, &prober);
  const std::string warning =
      FailureToleranceWarning(f.nodes, f.replicas, f.write_quorum, f.read_quorum);
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  return rc;
}

}  // namespace shardkv::cli
