// Planning, showing, confirming and beginning one change (change_begin.h).
#include "change_begin.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <thread>

#include "cli_common.h"
#include "cluster_probe.h"
#include "cluster_up.h"
#include "plan_printer.h"
#include "rebalance_client.h"

namespace shardkv::cli {
namespace {

using namespace limits;

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

}  // namespace

bool RefuseUnconfirmable(const ChangeFlags& f) {
  if (f.yes || f.plan_only || isatty(STDIN_FILENO) == 1) return false;
  ReportError(
      "not starting the change: stdin is not a terminal, so there is nobody to confirm; pass "
      "--yes to begin it (or --plan-only to only plan)",
      kExitUsage);
  return true;
}

std::chrono::milliseconds ProbeTimeout(const GlobalOptions& g) {
  return std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 2000));
}

int PlanAndBegin(const GlobalOptions& g, const ChangeFlags& f, const ChangeJob& c) {
  ChangeRequest change;
  change.kind = c.kind;
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
  std::unique_ptr<Admin> admin = AdminFor(g, dir);
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
  if (!c.majority_checked && c.map != nullptr) {
    const std::string what =
        c.kind == ChangeKind::kParams
            ? std::string("change the replication")
            : std::string(ChangeKindName(c.kind)) + " node " + std::to_string(c.node_id);
    if (int code = RefuseWithoutMajority(g, *c.map, what); code != kExitOk) {
      undo();
      return code;
    }
  }
  Progress("planning: " +
           (c.kind == ChangeKind::kParams
                ? std::string("replication and quorums")
                : std::string(ChangeKindName(c.kind)) + " node " + std::to_string(c.node_id)) +
           " (counting keys)");
  // Planning counts keys on one live old replica per range; a replica that died moments ago is
  // still believed alive until gossip notices, and the count fails with Unavailable. Planning
  // changes nothing, so it is retried for a while.
  const auto retry_until = SteadyClock::now() + std::chrono::seconds(20);
  AdminReply plan = admin->Plan(change, CallTo(c.askees, AdminTimeout(g)));
  while (!plan.status.ok() && !plan.unreachable && !plan.foreign &&
         plan.status.code() == Status::Code::kUnavailable && SteadyClock::now() < retry_until) {
    Progress("planning failed (" + plan.status.message() + "); retrying in 1 s");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    plan = admin->Plan(change, CallTo(c.askees, AdminTimeout(g)));
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
  // The plan reports the default limits; the ones this command begins the change with apply.
  plan.report.record.rate_bytes_per_s = throttle.rate_bytes_per_s;
  plan.report.record.streams_per_node = throttle.streams_per_node;
  const PlanContext ctx{c.address, f.weight, plan.address};
  if (!g.json) PrintPlanTable(stdout, plan.report, ctx);
  std::fflush(stdout);
  check_pipe();
  // The rebalancer will report the effective replication after the change; until then it is
  // derived from the map here (min(R, nodes), quorums capped at it, as ClusterMap does).
  if (c.map != nullptr && c.kind == ChangeKind::kRemove)
    WarnReplication(*c.map, c.map->nodes().size() - 1);
  if (c.map != nullptr && c.kind == ChangeKind::kParams) {
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
  AdminReply before = admin->ChangeStatus("", CallTo(c.askees, ProbeTimeout(g)));
  if (!before.status.ok()) before.report = ChangeReport{};  // no change known: any new one counts
  if (c.guard != nullptr) c.guard->Busy();  // a begin in flight is never undone by a signal
  // The node that planned begins (and drives) the change.
  AdminReply begun =
      admin->Begin(change, throttle, plan.address, CallTo({plan.address}, AdminTimeout(g)));
  if (!begun.status.ok()) {
    // The commit may have landed although the driver failed afterwards or its reply was lost:
    // the cluster's status decides (Admin::ResolveOutcome), so that the exit code says what
    // happened.
    const ChangeOutcome outcome =
        admin->ResolveOutcome(begun, ChangeEffect::Begin(before.report, c.kind, c.node_id),
                              std::chrono::seconds(2), CallTo(c.askees, ProbeTimeout(g)));
    if (outcome.outcome == MutationOutcome::kApplied) {
      std::fprintf(stderr, "note: %s answered 'begin' with an error (%s), but the change began\n",
                   plan.address.c_str(), begun.status.message().c_str());
      begun.status = Status::OK();
      begun.report = *outcome.report;
      begun.address = outcome.address;
    } else if (outcome.outcome == MutationOutcome::kIndeterminate) {
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
    // A refusal for want of a majority (Unavailable, and the members' count confirms it) is
    // exit 3 like the refusal before planning, whatever the message says.
    bool no_majority = false;
    if (begun.status.code() == Status::Code::kUnavailable && c.map != nullptr) {
      NodeProber prober(g.credentials);
      no_majority = !CountMajority(*c.map, &prober, ProbeTimeout(g)).held();
    }
    return ReportError("the cluster refused the change: " + begun.status.message(),
                       begun.foreign || no_majority ? kExitUnreachable : kExitFailed);
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
      static_cast<unsigned long long>(r.planned_ranges), begun.report.driver,
      DriverAddress(begun.report, c.map, begun.address).c_str(), WatchHint(g).c_str());
  return kExitOk;
}

int RefuseWithoutMajority(const GlobalOptions& g, const ClusterMap& map, const std::string& what) {
  NodeProber prober(g.credentials);
  const MemberMajority m = CountMajority(map, &prober, ProbeTimeout(g));
  if (m.held()) return kExitOk;
  const std::string why = "cannot " + what + ": " + m.Describe(map) +
                          " (a membership change commits through a majority of them); start "
                          "the others first; nothing was changed";
  if (g.json) std::cout << OutcomeErrorJson(MutationOutcome::kNotApplied, why) << std::endl;
  return ReportError(why, kExitUnreachable);
}

StatusOr<ClusterMap> CurrentMap(const GlobalOptions& g, const std::string& dir,
                                const std::vector<std::string>& addresses) {
  return AdminFor(g, dir)->NewestMap(CallTo(addresses, ProbeTimeout(g)));
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
  cmd->add_flag("--json", g->json, "Print the plan as JSON (schema in docs/cli.md)");
}

}  // namespace shardkv::cli
