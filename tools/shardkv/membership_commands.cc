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

struct ChangeFlags {
  double weight = 1.0;
  bool plan_only = false;
  bool yes = false;
  uint32_t rate_mb = kDefaultRateMb;
  uint32_t streams = kDefaultStreams;
  uint32_t wait_s = 60;
};

// Without --yes (or --plan-only) the change needs a confirmation, which needs a terminal: refuse
// before anything is started or counted.
bool RefuseUnconfirmable(const ChangeFlags& f) {
  if (f.yes || f.plan_only || isatty(STDIN_FILENO) == 1) return false;
  ReportError(
      "not starting the change: stdin is not a terminal, so there is nobody to confirm; pass "
      "--yes to begin it (or --plan-only to only plan)",
      kExitUsage);
  return true;
}

// Warnings about the placement after a remove: fewer copies than configured, or no room for a
// node failure. `nodes_after`: members once the change is done.
void WarnReplication(const ClusterMap& map, size_t nodes_after) {
  const ClusterParams& p = map.params();
  const uint32_t n = static_cast<uint32_t>(nodes_after);
  const uint32_t r = std::min(p.replication_factor, n);
  const uint32_t w = std::min(p.write_quorum, r), q = std::min(p.read_quorum, r);
  if (r < p.replication_factor) {
    std::fprintf(stderr,
                 "warning: with %u node(s) left, every key has %u cop%s, fewer than the configured "
                 "%u (the replication factor comes back as nodes are added)\n",
                 n, r, r == 1 ? "y" : "ies", p.replication_factor);
  }
  const std::string tolerance = FailureToleranceWarning(n, r, w, q);
  if (!tolerance.empty()) std::fprintf(stderr, "%s\n", tolerance.c_str());
}

// Planning counts every key on the old replicas and "begin" waits until every member installed
// the new map: both may take far longer than a key-value operation.
std::chrono::milliseconds AdminTimeout(const GlobalOptions& g) {
  return std::chrono::milliseconds(std::max<uint32_t>(g.timeout_ms, 150000));
}
std::chrono::milliseconds ProbeTimeout(const GlobalOptions& g) {
  return std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 2000));
}

std::string WatchHint(const GlobalOptions& g) {
  std::string hint = "shardkv rebalance watch";
  if (!g.dir.empty()) hint += " --dir " + g.dir;
  if (!g.cluster.empty()) {
    std::string list;
    for (const auto& a : g.cluster) list += (list.empty() ? "" : ",") + a;
    hint += " --cluster " + list;
  }
  return hint;
}

// Everything one change needs, whichever command started it.
struct ChangeJob {
  InterruptGuard* guard = nullptr;  // add-node: cleans up on a signal (else null)
  const ClusterMap* map = nullptr;  // the map the change starts from
  std::string kind;                 // add, remove or params
  uint32_t node_id = 0;
  uint32_t replicas = 0, write_quorum = 0, read_quorum = 0;  // params (0 keeps one)
  std::string address;              // add
  std::vector<std::string> askees;  // members to ask for the plan, in order
  // Undoes what the command did before planning (add-node: the new node); runs when nothing
  // was begun.
  std::function<void()> undo = [] {};
  // Runs once the change began (add-node: record the node count).
  std::function<void()> on_begun = [] {};
};

// Plan, show, confirm, begin. Returns the exit code.
int PlanAndBegin(const GlobalOptions& g, const ChangeFlags& f, const ChangeJob& c) {
  ChangeRequest change;
  change.kind = c.kind == "remove"   ? ChangeKind::kRemove
                : c.kind == "params" ? ChangeKind::kParams
                                     : ChangeKind::kAdd;
  change.node_id = c.node_id;
  change.address = c.address;
  change.weight = f.weight;
  change.replicas = c.replicas;
  change.write_quorum = c.write_quorum;
  change.read_quorum = c.read_quorum;
  ChangeThrottle throttle;
  throttle.rate_bytes_per_s = uint64_t{f.rate_mb} << 20;
  throttle.streams_per_node = f.streams;
  const std::string dir = AbsoluteDir(g.ClusterDir());
  AdminClient client = ClientFor(g, dir);
  auto undo = [&c] {
    if (c.guard != nullptr) {
      c.guard->UndoNow();  // runs c.undo unless a signal already did
    } else {
      c.undo();
    }
  };
  auto check_pipe = [&c] {
    if (c.guard != nullptr) c.guard->CheckPipe();
  };
  Progress("planning: " +
           (c.kind == "params" ? std::string("replication and quorums")
                               : c.kind + " node " + std::to_string(c.node_id)) +
           " (counting keys)");
  // Planning counts keys on one live old replica per range; a replica that died moments ago is
  // still believed alive until gossip notices, and the count fails with Unavailable. Planning
  // changes nothing, so it is retried for a while.
  const auto retry_until = SteadyClock::now() + std::chrono::seconds(20);
  AdminReply plan = client.Plan(c.askees, change, AdminTimeout(g));
  while (!plan.status.ok() && !plan.unreachable && !plan.foreign &&
         plan.status.code() == Status::Code::kUnavailable && SteadyClock::now() < retry_until) {
    Progress("planning failed (" + plan.status.message() + "); retrying in 1 s");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    plan = client.Plan(c.askees, change, AdminTimeout(g));
  }
  if (!plan.status.ok()) {
    undo();
    // A plan the cluster rejects as invalid (removing the last node) is bad input: exit 2.
    const int code = plan.unreachable || plan.foreign  ? kExitUnreachable
                     : plan.status.IsInvalidArgument() ? kExitUsage
                                                       : kExitFailed;
    const std::string why = plan.unreachable || plan.foreign
                                ? plan.status.message()
                                : "the cluster refused the plan: " + plan.status.message();
    // Planning commits nothing: whatever went wrong, the change was not applied.
    if (g.json) std::cout << OutcomeErrorJson(MutationOutcome::kNotApplied, why) << std::endl;
    return ReportError(why, code);
  }
  const PlanContext ctx{c.address, f.weight, plan.address};
  if (!g.json) PrintPlanTable(stdout, plan.report, ctx);
  std::fflush(stdout);
  check_pipe();
  // The rebalancer will report the effective replication after the change; until then it is
  // derived from the map here (min(R, nodes), quorums capped at it, as ClusterMap does).
  if (c.map != nullptr && c.kind == "remove") WarnReplication(*c.map, c.map->nodes().size() - 1);
  if (c.map != nullptr && c.kind == "params") {
    const ChangeRecord& r = plan.report.record;
    const uint32_t n = static_cast<uint32_t>(c.map->nodes().size());
    const std::string tolerance =
        FailureToleranceWarning(n, r.replicas_after, r.write_quorum_after, r.read_quorum_after);
    if (!tolerance.empty()) std::fprintf(stderr, "%s\n", tolerance.c_str());
    if (r.write_quorum_after + r.read_quorum_after <= r.replicas_after) {
      std::fprintf(stderr,
                   "warning: W + Q = %u is not above R = %u: a read may miss an acknowledged "
                   "write\n",
                   r.write_quorum_after + r.read_quorum_after, r.replicas_after);
    }
    if (r.params_replicas > n) {
      std::fprintf(stderr,
                   "warning: %u node(s) hold at most %u copies of a key; the replication factor "
                   "%u takes effect as nodes are added\n",
                   n, n, r.params_replicas);
    }
  }
  if (f.plan_only) {
    undo();
    if (g.json) std::cout << PlanJson(plan.report, ctx, nullptr) << "\n";
    Progress("--plan-only: nothing changed");
    return kExitOk;
  }
  if (!f.yes) {
    // RefuseUnconfirmable ran before anything started: stdin is a terminal here.
    if (g.json) PrintPlanTable(stderr, plan.report, ctx);  // stdout keeps the one JSON object
    std::fprintf(stderr, "\nProceed? [y/N] ");
    std::fflush(stderr);
    check_pipe();
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "y" && answer != "Y" && answer != "yes" && answer != "YES") {
      undo();
      if (g.json) {
        std::cout << WithOutcome(PlanJson(plan.report, ctx, nullptr), MutationOutcome::kNotApplied)
                  << "\n";
      }
      Progress("aborted: nothing changed");
      return kExitFailed;
    }
  }
  // The last change before this one, to tell a change this command began from an older one.
  const AdminReply before = client.Status(c.askees, "", ProbeTimeout(g));
  const uint64_t last_change =
      before.status.ok() && before.report.has_change ? before.report.record.change_id : 0;
  if (c.guard != nullptr) c.guard->Busy();  // a begin in flight is never undone by a signal
  // The node that planned begins (and drives) the change.
  AdminReply begun = client.Begin(plan.address, change, throttle, AdminTimeout(g));
  if (!begun.status.ok() && !begun.foreign) {
    // The commit may have landed although the driver failed afterwards or its reply was lost:
    // the cluster's status decides, so that the exit code says what happened.
    auto effect = AwaitEffect(
        &client, c.askees,
        [&](const ChangeReport& r) {
          return r.has_change && r.record.change_id != last_change &&
                 ChangeKindName(r.record.kind) == c.kind && r.record.node_id == c.node_id;
        },
        std::chrono::seconds(2), ProbeTimeout(g));
    if (effect) {
      std::fprintf(stderr, "note: %s answered 'begin' with an error (%s), but the change began\n",
                   plan.address.c_str(), begun.status.message().c_str());
      begun.status = Status::OK();
      begun.report = *effect;
      begun.address = effect->driver_address;
    } else if (ClassifyMutation(begun.status) == MutationOutcome::kIndeterminate) {
      // Sent, and neither an answer nor the status says what happened (a timeout, a commit
      // "outcome unknown"). Undoing could stop a node the cluster now counts on: leave
      // everything as it is.
      const std::string why = "no definite answer to 'begin' from " + plan.address + " (" +
                              begun.status.message() +
                              "): whether the change started is unknown; check with 'shardkv "
                              "rebalance status'";
      if (g.json) {
        std::cout << WithOutcome(PlanJson(plan.report, ctx, nullptr),
                                 MutationOutcome::kIndeterminate)
                  << std::endl;
      }
      return ReportError(why, kExitIndeterminate);
    }
  }
  if (!begun.status.ok()) {
    // Not applied: refused, or the driver could not be reached before anything was sent.
    undo();
    if (g.json) {
      std::cout << WithOutcome(PlanJson(plan.report, ctx, nullptr), MutationOutcome::kNotApplied)
                << std::endl;
    }
    if (begun.unreachable) {
      return ReportError("no answer to 'begin' from " + plan.address + " (" +
                             begun.status.message() + "): the change was not started",
                         kExitUnreachable);
    }
    return ReportError("the cluster refused the change: " + begun.status.message(),
                       begun.foreign || NoMajority(begun.status) ? kExitUnreachable : kExitFailed);
  }
  // The guard stays busy: a signal that arrived meanwhile takes effect once the result is printed
  // (when the guard is destroyed), never as an undo.
  c.on_begun();
  if (g.json) {
    std::cout << WithOutcome(PlanJson(plan.report, ctx, &begun.report), MutationOutcome::kApplied)
              << "\n";
    return kExitOk;
  }
  const ChangeRecord& r = begun.report.record;
  std::printf(
      "\nchange %llu started: %s, %llu copies to move in %llu stream tasks, driven by node %u "
      "(%s); watch with `%s`\n",
      static_cast<unsigned long long>(r.change_id), DescribeChange(r).c_str(),
      static_cast<unsigned long long>(r.planned_copies),
      static_cast<unsigned long long>(r.planned_ranges), begun.report.driver, begun.address.c_str(),
      WatchHint(g).c_str());
  return kExitOk;
}

// The members to ask, from the newest map the directory's nodes (or --cluster) know.
StatusOr<ClusterMap> CurrentMap(const GlobalOptions& g, const std::string& dir,
                                const std::vector<std::string>& addresses) {
  AdminClient client = ClientFor(g, dir);
  return client.NewestMap(addresses, ProbeTimeout(g));
}

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
  c.kind = "add";
  c.node_id = id;
  c.address = address;
  c.askees = MemberAddresses(*map, {id});
  c.guard = &guard;
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
  AdminClient client = ClientFor(g, dir);
  // The joining node is not of this cluster (yet): asked without an expected cluster id.
  const NodeProbe joining = client.Probe(address, ProbeTimeout(g));
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
  c.kind = "add";
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
  c.kind = "remove";
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
  c.kind = "params";
  c.replicas = replicas;
  c.write_quorum = write_quorum;
  c.read_quorum = read_quorum;
  c.askees = MemberAddresses(*map, {});
  return PlanAndBegin(g, f, c);
}

void AddChangeFlags(CLI::App* cmd, GlobalOptions* g, ChangeFlags* f, bool add) {
  if (add) {
    cmd->add_option("--weight", f->weight, "Relative weight of the node (1 = like the others)")
        ->capture_default_str()
        ->check(CLI::Range(kMinWeight, kMaxWeight));
  }
  cmd->add_flag("--plan-only", f->plan_only, "Print the plan and change nothing");
  cmd->add_flag("--yes,-y", f->yes,
                "Begin without asking (required when stdin is no terminal: without it the "
                "command refuses at once, exit 2)");
  cmd->add_option("--rate", f->rate_mb,
                  "Streaming rate limit per destination node, MB/s (0 = unthrottled)")
      ->capture_default_str()
      ->check(CLI::Range(kMinRateMb, kMaxRateMb));
  cmd->add_option("--streams", f->streams, "Concurrent stream tasks per destination node")
      ->capture_default_str()
      ->check(CLI::Range(kMinStreams, kMaxStreams));
  cmd->add_flag("--json", g->json, "Print the plan as JSON (schema in README)");
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
      "ranges to the others. Once the change is done, 'rebalance watch' (or 'cluster status') "
      "stops the node's process");
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
