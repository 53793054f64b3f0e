#include "rebalance_commands.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_common.h"
#include "cluster_limits.h"
#include "local_cluster.h"
#include "plan_printer.h"
#include "rebalance_client.h"
#include "shardkv/stats.h"
#include "watch_view.h"

namespace shardkv::cli {
namespace {

// Why more copies moved than the plan counted, from the record's split of the moved copies.
std::string BeyondPlan(const ChangeRecord& rec) {
  std::string out = std::to_string(rec.moved_during_change) +
                    " were written by clients during the change (the stream carried them too)";
  if (rec.resumed_copies != 0) {
    out += ", " + std::to_string(rec.resumed_copies) +
           " were copied before a resume or takeover continued from the checkpoints";
  }
  return out;
}

using Clock = std::chrono::steady_clock;

std::chrono::milliseconds StatusTimeout(const GlobalOptions& g) {
  return std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 3000));
}

// Errors the nodes returned to clients since the change began: the change's own count once it
// is done, else the reachable nodes' counters now minus their sum when it began.
int64_t ClientErrors(Admin* admin, const ChangeReport& r, const std::vector<std::string>& addresses,
                     std::chrono::milliseconds t) {
  if (r.record.state == ChangeState::kDone) return r.record.client_errors;
  const int64_t now = admin->SumCounter(std::string(stats::client_errors), CallTo(addresses, t));
  return std::max<int64_t>(0, now - r.record.client_errors_at_start);
}

void PrintSummary(const ChangeReport& r, uint64_t copies, uint64_t bytes, int64_t client_errors) {
  const ChangeRecord& rec = r.record;
  std::printf("change %llu (%s): %s\n", static_cast<unsigned long long>(rec.change_id),
              DescribeChange(rec).c_str(), StateName(r).c_str());
  if (!rec.error.empty()) std::printf("  error:          %s\n", rec.error.c_str());
  const double seconds = rec.finished_ms > rec.started_ms && rec.started_ms != 0
                             ? static_cast<double>(rec.finished_ms - rec.started_ms) / 1e3
                             : r.elapsed_s;
  std::printf("  copies moved:   %llu of %llu planned; %.1f%% of all %llu copies (ideal %.1f%%)\n",
              static_cast<unsigned long long>(copies),
              static_cast<unsigned long long>(rec.planned_copies),
              100 * Ratio(static_cast<double>(copies), static_cast<double>(rec.total_copies)),
              static_cast<unsigned long long>(rec.total_copies), 100 * rec.ideal_fraction);
  if (copies > rec.planned_copies) {
    // The plan counted the keys once, before streaming; the record splits what came on top.
    std::printf("                  the %llu beyond the plan: %s\n",
                static_cast<unsigned long long>(copies - rec.planned_copies),
                BeyondPlan(rec).c_str());
  }
  std::printf("  keys remapped:  %llu distinct keys (of %llu live)\n",
              static_cast<unsigned long long>(rec.remapped_keys),
              static_cast<unsigned long long>(rec.live_keys));
  std::printf("  duration:       %s\n", HumanSeconds(seconds).c_str());
  std::printf("  throughput:     %.0f copies/s, %.2f MB/s (%s/s; %s moved)\n",
              Ratio(static_cast<double>(copies), seconds),
              Ratio(static_cast<double>(bytes), seconds) / 1048576.0,
              HumanBytes(Ratio(static_cast<double>(bytes), seconds)).c_str(),
              HumanBytes(static_cast<double>(bytes)).c_str());
  std::printf("  client errors:  %lld %s\n", static_cast<long long>(client_errors),
              rec.state == ChangeState::kDone ? "(counted by the nodes during the change)"
                                              : "(counted by the reachable nodes so far)");
  if (rec.resumed_tasks != 0) {
    std::printf("  resumed tasks:  %llu (continued from a checkpoint)\n",
                static_cast<unsigned long long>(rec.resumed_tasks));
  }
}

// How long `watch` asks again when a node that does not drive knows of no change.
constexpr std::chrono::seconds kNoChangePatience{5};

// The leader reports a change ended once it applied the final map; the other members install it
// moments later. The members of the newest map that hold an older epoch than `epoch`, or did not
// answer; empty when every one holds it. One request per member.
std::vector<BehindMember> MembersBehind(Admin* admin, const ClusterMap& newest, uint64_t epoch,
                                        std::chrono::milliseconds timeout) {
  std::vector<BehindMember> out;
  for (const ClusterNode& n : newest.nodes()) {
    auto theirs = admin->NewestMap(CallTo({n.address}, timeout));
    if (!theirs.ok()) {
      out.push_back({n.id, std::nullopt});
    } else if (theirs->epoch() < epoch) {
      out.push_back({n.id, theirs->epoch()});
    }
  }
  return out;
}

std::string DescribeBehind(const std::vector<BehindMember>& behind) {
  std::string out;
  for (const BehindMember& b : behind) {
    if (!out.empty()) out += ", ";
    out += "node " + std::to_string(b.id) +
           (b.epoch ? " at epoch " + std::to_string(*b.epoch) : std::string(" did not answer"));
  }
  return out;
}

// Waits (up to 10 s, and the deadline) until every member that answers holds an epoch at least
// the report's, so that whatever follows `watch` sees one map everywhere. A member that does not
// answer is skipped: it catches up when it is back.
void AwaitInstalled(Admin* admin, const std::vector<std::string>& addresses,
                    const ChangeReport& last, Clock::time_point deadline,
                    std::chrono::milliseconds timeout) {
  auto newest = admin->NewestMap(CallTo(addresses, timeout));
  if (!newest.ok()) return;
  const auto until = std::min(deadline, Clock::now() + std::chrono::seconds(10));
  for (;;) {
    std::vector<BehindMember> behind = MembersBehind(admin, *newest, last.epoch, timeout);
    std::erase_if(behind, [](const BehindMember& b) { return !b.epoch.has_value(); });
    if (behind.empty()) return;
    if (Clock::now() >= until) {
      std::fprintf(stderr, "note: %s (the change ended at epoch %llu)\n",
                   DescribeBehind(behind).c_str(), static_cast<unsigned long long>(last.epoch));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // polled, bounded by `until`
  }
}

int DoWatch(const GlobalOptions& g, uint32_t interval_ms, uint32_t timeout_s) {
  const std::string dir = AbsoluteDir(g.ClusterDir());
  std::unique_ptr<Admin> admin = AdminFor(g, dir);
  WatchView view(StderrIsTerminal());
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  std::string preferred;
  ChangeReport last;
  bool reached = false;
  const auto first_poll = Clock::now();
  for (;;) {
    const auto poll_start = Clock::now();
    const std::vector<std::string> addresses = AdminAddresses(g, dir);
    AdminReply reply = admin->ChangeStatus(preferred, CallTo(addresses, StatusTimeout(g)));
    reached = reply.status.ok();
    if (reply.status.ok()) {
      preferred = reply.report.from_driver ? reply.address : std::string();
      last = reply.report;
      // A node that does not drive answers from its own map, which may not hold a change begun
      // a moment ago (leadership moving, the map still on its way): ask again for a while
      // before saying there is none.
      if (!last.has_change && !reply.report.from_driver &&
          Clock::now() < first_poll + kNoChangePatience && Clock::now() < deadline) {
        view.Note("node at " + reply.address + " knows of no change yet; still asking");
        std::this_thread::sleep_until(
            std::min(deadline, poll_start + std::chrono::milliseconds(interval_ms)));
        continue;
      }
      if (!last.has_change) {
        view.Close();
        return ReportError("no membership change to watch: none was ever made in this cluster",
                           kExitFailed);
      }
      if (ChangeEnded(last)) break;
      view.Show(last, "");
    } else {
      preferred.clear();
      view.Note((reply.unreachable ? "" : "error: ") + reply.status.message() + "; still trying");
    }
    if (Clock::now() >= deadline) {
      view.Close();
      return ReportError(
          "gave up after " + std::to_string(timeout_s) + " s (--timeout-s): " +
              (reached ? "the change is still " + StateName(last) : reply.status.message()),
          reached ? kExitFailed : kExitUnreachable);
    }
    std::this_thread::sleep_until(
        std::min(deadline, poll_start + std::chrono::milliseconds(interval_ms)));
  }
  AwaitInstalled(admin.get(), AdminAddresses(g, dir), last, deadline, StatusTimeout(g));
  view.Show(last, "");
  view.Close();
  const bool done = last.record.state == ChangeState::kDone;
  const uint64_t copies = done ? MovedCopies(last) : std::max(MovedCopies(last), view.max_copies());
  const uint64_t bytes = done ? MovedBytes(last) : std::max(MovedBytes(last), view.max_bytes());
  const int64_t errors = ClientErrors(admin.get(), last, AdminAddresses(g, dir), StatusTimeout(g));
  std::printf("\n");
  PrintSummary(last, copies, bytes, errors);
  if (auto retired = RetireRemovedNode(g, dir, last)) std::printf("%s\n", retired->c_str());
  if (last.record.state == ChangeState::kFailed) {
    std::printf(
        "resume it with 'shardkv rebalance resume' or undo it with 'shardkv rebalance cancel'\n");
  }
  std::fflush(stdout);
  if (done) return kExitOk;
  return ReportError("change " + std::to_string(last.record.change_id) + " " + StateName(last) +
                         (last.record.error.empty() ? "" : ": " + last.record.error),
                     kExitFailed);
}

void PrintStatus(const ChangeReport& r, int64_t client_errors) {
  const ChangeRecord& rec = r.record;
  std::printf("change %llu: %s, %s (epoch %llu, driver node %u at %s%s)\n",
              static_cast<unsigned long long>(rec.change_id), DescribeChange(rec).c_str(),
              StateName(r).c_str(), static_cast<unsigned long long>(r.epoch), r.driver,
              r.driver_address.c_str(), r.from_driver ? "" : ", not reachable: no live progress");
  std::printf(
      "  copies:   %llu moved of %llu planned (%.1f%%); %.1f%% of all %llu copies, ideal "
      "%.1f%%\n",
      static_cast<unsigned long long>(MovedCopies(r)),
      static_cast<unsigned long long>(rec.planned_copies),
      100 * Ratio(static_cast<double>(MovedCopies(r)), rec.planned_copies),
      100 * Ratio(static_cast<double>(MovedCopies(r)), rec.total_copies),
      static_cast<unsigned long long>(rec.total_copies), 100 * rec.ideal_fraction);
  std::printf("  bytes:    %s moved of %s planned\n",
              HumanBytes(static_cast<double>(MovedBytes(r))).c_str(),
              HumanBytes(static_cast<double>(rec.planned_bytes)).c_str());
  if (MovedCopies(r) > rec.planned_copies) {
    std::printf("            (%llu beyond the plan: %s)\n",
                static_cast<unsigned long long>(MovedCopies(r) - rec.planned_copies),
                BeyondPlan(rec).c_str());
  }
  std::printf("  keys:     %llu remapped of %llu live\n",
              static_cast<unsigned long long>(rec.remapped_keys),
              static_cast<unsigned long long>(rec.live_keys));
  std::printf("  limits:   %s/s, %u streams per node; elapsed %s; client errors %lld\n",
              HumanBytes(static_cast<double>(rec.rate_bytes_per_s)).c_str(), rec.streams_per_node,
              HumanSeconds(r.elapsed_s).c_str(), static_cast<long long>(client_errors));
  if (!rec.error.empty()) std::printf("  error:    %s\n", rec.error.c_str());
  if (r.streams.empty()) return;
  std::printf("\n  %-6s %-6s %13s %21s %23s\n", "SOURCE", "DEST", "RANGES", "COPIES", "BYTES");
  for (const StreamProgress& s : r.streams) {
    const std::string ranges = std::to_string(s.ranges_done) + "/" + std::to_string(s.ranges_total);
    const std::string copies =
        std::to_string(s.copies_done) + "/" + std::to_string(s.copies_planned);
    const std::string bytes = HumanBytes(static_cast<double>(s.bytes_done)) + "/" +
                              HumanBytes(static_cast<double>(s.bytes_planned));
    std::printf("  %-6u %-6u %13s %21s %23s\n", s.source, s.destination, ranges.c_str(),
                copies.c_str(), bytes.c_str());
  }
}

int DoStatus(const GlobalOptions& g) {
  const std::string dir = AbsoluteDir(g.ClusterDir());
  const auto addresses = AdminAddresses(g, dir);
  std::unique_ptr<Admin> admin = AdminFor(g, dir);
  AdminReply reply = admin->ChangeStatus("", CallTo(addresses, StatusTimeout(g)));
  if (!reply.status.ok()) {
    return ReportError(reply.status,
                       reply.unreachable || reply.foreign ? kExitUnreachable : kExitFailed);
  }
  const ChangeReport& r = reply.report;
  const int64_t errors =
      r.has_change ? ClientErrors(admin.get(), r, addresses, StatusTimeout(g)) : int64_t{0};
  // "done" comes from the leader once it applied the final map; the other members install it
  // moments later (or, when cut off, once they are back). Say which do not hold it yet.
  std::vector<BehindMember> behind;
  if (r.has_change && ChangeEnded(r)) {
    if (auto newest = admin->NewestMap(CallTo(addresses, StatusTimeout(g))); newest.ok()) {
      behind = MembersBehind(admin.get(), *newest, r.epoch, StatusTimeout(g));
    }
  }
  if (g.json) {
    std::cout << StatusJson(r, errors, behind) << "\n";
    return kExitOk;  // the query succeeded, whatever it found ("state":"none")
  }
  if (!r.has_change) {
    std::printf("no membership change was ever made in this cluster (epoch %llu)\n",
                static_cast<unsigned long long>(r.epoch));
    return kExitOk;
  }
  PrintStatus(r, errors);
  if (!behind.empty()) {
    std::printf(
        "  installed: not everywhere yet: %s (the final map is epoch %llu; members catch "
        "up by themselves)\n",
        DescribeBehind(behind).c_str(), static_cast<unsigned long long>(r.epoch));
  } else if (ChangeEnded(r)) {
    std::printf("  installed: every member holds the final map (epoch %llu)\n",
                static_cast<unsigned long long>(r.epoch));
  }
  return kExitOk;
}

void PrintSteered(const GlobalOptions& g, const std::string& command, const ChangeReport& r,
                  const std::string& address) {
  if (g.json) {
    // Printed only once the command took effect.
    std::cout << WithOutcome(StatusJson(r, r.record.client_errors), MutationOutcome::kApplied)
              << "\n";
    return;
  }
  std::printf("change %llu (%s): %s", static_cast<unsigned long long>(r.record.change_id),
              DescribeChange(r.record).c_str(), StateName(r).c_str());
  if (command == "throttle") {
    std::printf("; rate limit %s, %u streams per node",
                r.record.rate_bytes_per_s == 0
                    ? "none (unthrottled)"
                    : (HumanBytes(static_cast<double>(r.record.rate_bytes_per_s)) + "/s").c_str(),
                r.record.streams_per_node);
  }
  std::printf(" (node %u at %s)\n", r.driver, DriverAddress(r, nullptr, address).c_str());
}

// cancel, resume, throttle: one command to the driver, then the state it left. The exit code
// follows what the cluster shows afterwards, not only the reply: a commit may land on the other
// nodes while the driver fails (row 2 of the findings), or the reply may be lost.
int DoSteer(const GlobalOptions& g, const SteerCommand& cmd) {
  const std::string command = cmd.Name();
  const std::string dir = AbsoluteDir(g.ClusterDir());
  const auto addresses = AdminAddresses(g, dir);
  std::unique_ptr<Admin> admin = AdminFor(g, dir);
  // Cancel and resume commit a new map; give them the time a commit may take.
  const auto timeout = std::chrono::milliseconds(std::max<uint32_t>(g.timeout_ms, 90000));
  // Every failure below prints the outcome with --json; the error line goes to stderr.
  auto fail = [&g](MutationOutcome outcome, const std::string& why, int code) {
    if (g.json) std::cout << OutcomeErrorJson(outcome, why) << std::endl;
    return ReportError(why, code);
  };
  AdminReply pre = admin->ChangeStatus("", CallTo(addresses, StatusTimeout(g)));
  if (!pre.status.ok()) {
    // Nothing was sent yet.
    return fail(MutationOutcome::kNotApplied, pre.status.message(),
                pre.unreachable || pre.foreign ? kExitUnreachable : kExitFailed);
  }
  AdminReply reply = Steer(admin.get(), pre.address, cmd, timeout);
  if (reply.status.ok()) {
    PrintSteered(g, command, reply.report, reply.address);
    return kExitOk;
  }
  if (reply.foreign) {
    return fail(MutationOutcome::kNotApplied, reply.status.message(), kExitUnreachable);
  }
  const int refused_code = reply.status.IsInvalidArgument() ? kExitUsage
                           : NoMajority(reply.status)       ? kExitUnreachable
                                                            : kExitFailed;
  // The cluster's status says whether an error reply took effect anyway (Admin::ResolveOutcome);
  // a command that could not apply to the change as it was is refused for good.
  const ChangeOutcome outcome =
      admin->ResolveOutcome(reply, EffectOf(cmd, pre.report), std::chrono::seconds(2),
                            CallTo(addresses, StatusTimeout(g)));
  switch (outcome.outcome) {
    case MutationOutcome::kApplied:
      std::fprintf(stderr, "note: %s reported an error (%s), but the %s took effect\n",
                   reply.address.c_str(), reply.status.message().c_str(), command.c_str());
      PrintSteered(g, command, *outcome.report, outcome.address);
      return kExitOk;
    case MutationOutcome::kIndeterminate:
      return fail(MutationOutcome::kIndeterminate,
                  "no definite answer to '" + command + "' from " + reply.address + " (" +
                      reply.status.message() + ") and the cluster does not show it: whether " +
                      "it took effect is unknown; check with 'shardkv rebalance status'",
                  kExitIndeterminate);
    case MutationOutcome::kNotApplied:
      break;
  }
  if (reply.unreachable) {
    return fail(MutationOutcome::kNotApplied,
                "no answer to '" + command + "' from " + reply.address + " (" +
                    reply.status.message() + "): it was not sent",
                kExitUnreachable);
  }
  return fail(MutationOutcome::kNotApplied, command + " refused: " + reply.status.message(),
              refused_code);
}

}  // namespace

void RegisterRebalanceCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* rebalance = app.add_subcommand(
      "rebalance",
      "Follow and steer a membership change (begun by 'cluster add-node', 'cluster "
      "join' or 'cluster remove-node')");
  rebalance->require_subcommand(1);
  rebalance->footer(
      "Nodes: --cluster HOST:PORT[,...] or the local cluster in --dir DIR (default $SHARDKV_DIR, "
      "else ~/.shardkv/local); requests follow the node driving the change, and a node of "
      "another cluster is refused. Exit codes: 0 ok (status: also when there never was a "
      "change), 1 failed, cancelled or refused by the cluster (nothing changed), 2 usage or bad "
      "input, 3 cluster unreachable, no majority, or a node of another cluster (not applied), 4 "
      "sent but no definite answer: it may or may not have taken effect (check with 'shardkv "
      "rebalance status'). With --json, cancel, resume and throttle print \"outcome\": "
      "applied, not_applied or indeterminate, on error too.");

  using namespace limits;
  auto interval = std::make_shared<uint32_t>(500);
  auto timeout_s = std::make_shared<uint32_t>(3600);
  auto* watch = rebalance->add_subcommand(
      "watch",
      "Follow the change to its end: progress bars per stream on a terminal (else a line per "
      "poll), then a summary. When a remove (or a cancelled add) ends, it retires the node that "
      "left: stops its process and marks its directory removed, as 'cluster retire-node' does. "
      "Exit 0 when done, 1 when failed or cancelled");
  watch->add_option("--interval", *interval, "Milliseconds between polls")
      ->capture_default_str()
      ->check(CLI::Range(kMinWatchIntervalMs, kMaxWatchIntervalMs));
  watch
      ->add_option("--timeout-s", *timeout_s,
                   "Give up after this many seconds (unreachable nodes are retried meanwhile)")
      ->capture_default_str()
      ->check(CLI::Range(kMinWatchTimeoutS, kMaxWatchTimeoutS));
  watch->callback([=] { *exit_code = DoWatch(*g, *interval, *timeout_s); });

  auto* status = rebalance->add_subcommand(
      "status", "One snapshot of the current (or last) change: state, progress, streams");
  status->add_flag("--json", g->json, "JSON output (schema in docs/cli.md)");
  status->callback([=] { *exit_code = DoStatus(*g); });

  auto* cancel = rebalance->add_subcommand(
      "cancel", "Undo the change while it is streaming (or failed): back to the old placement");
  cancel->add_flag("--json", g->json, "Print the resulting status as JSON");
  cancel->callback([=] { *exit_code = DoSteer(*g, SteerCommand(SteerCommand::Kind::kCancel)); });

  auto* resume =
      rebalance->add_subcommand("resume", "Continue a failed change from its checkpoints");
  resume->add_flag("--json", g->json, "Print the resulting status as JSON");
  resume->callback([=] { *exit_code = DoSteer(*g, SteerCommand(SteerCommand::Kind::kResume)); });

  auto rate = std::make_shared<uint32_t>(0);
  auto streams = std::make_shared<uint32_t>(0);
  auto* throttle = rebalance->add_subcommand(
      "throttle", "Change the running change's rate limit and/or streams per node");
  auto* rate_opt =
      throttle
          ->add_option("--rate", *rate,
                       "Streaming rate limit per destination node, MB/s (0 = unthrottled)")
          ->check(CLI::Range(kMinRateMb, kMaxRateMb));
  throttle->add_option("--streams", *streams, "Concurrent stream tasks per destination node")
      ->check(CLI::Range(kMinStreams, kMaxStreams));
  throttle->add_flag("--json", g->json, "Print the resulting status as JSON");
  throttle->callback([=] {
    // --rate 0 is a value (unthrottled), so what counts is whether the flag was given.
    const bool have_rate = rate_opt->count() > 0, have_streams = *streams != 0;
    if (!have_rate && !have_streams) {
      *exit_code = ReportError("throttle needs --rate and/or --streams", kExitUsage);
      return;
    }
    SteerCommand cmd(SteerCommand::Kind::kThrottle);
    if (have_rate) cmd.rate_bytes_per_s = uint64_t{*rate} << 20;
    if (have_streams) cmd.streams_per_node = *streams;
    *exit_code = DoSteer(*g, cmd);
  });
}

}  // namespace shardkv::cli
