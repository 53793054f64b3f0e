#include "repair_command.h"

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "cli_common.h"
#include "cluster_dir.h"
#include "json_writer.h"
#include "rebalance_client.h"
#include "shardkv/admin.h"
#include "shardkv/repair.h"

namespace shardkv::cli {
namespace {

std::string Bytes(uint64_t b) {
  char buf[32];
  if (b < 1024) {
    std::snprintf(buf, sizeof(buf), "%" PRIu64 " B", b);
  } else if (b < (uint64_t{1} << 20)) {
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(b) / 1024);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(b) / (1 << 20));
  }
  return buf;
}

std::string SummaryJson(const RepairSummary& s) {
  JsonWriter j;
  j.Begin()
      .Field("complete", s.complete())
      .Field("ranges_compared", s.ranges_compared)
      .Field("ranges_differed", s.ranges_differed)
      .Field("ranges_skipped", s.ranges_skipped)
      .Field("ranges_failed", s.ranges_failed)
      .Field("leaves_differed", s.leaves_differed)
      .Field("keys_fetched", s.keys_fetched)
      .Field("bytes_fetched", s.bytes_fetched)
      .Field("keys_streamed", s.keys_streamed)
      .Field("bytes_streamed", s.bytes_streamed)
      .Field("tree_bytes", s.tree_bytes)
      .Field("duration_s", s.duration_s);
  j.Key("streamed").BeginArray();
  for (const RepairStreamed& n : s.streamed) {
    j.Begin().Field("node", n.node_id).Field("keys", n.keys).Field("bytes", n.bytes).End();
  }
  j.EndArray();
  j.Key("failed_nodes").BeginArray();
  for (uint32_t id : s.failed_nodes) j.Value(id);
  j.EndArray();
  j.Key("still_need_repair").BeginArray();
  for (uint32_t id : s.still_need_repair) j.Value(id);
  j.EndArray();
  j.Key("failures").BeginArray();
  for (const std::string& f : s.failures) j.Value(f);
  j.EndArray();
  j.End();
  return j.str();
}

void PrintSummary(const RepairSummary& s) {
  std::printf("ranges compared: %" PRIu64 ", differed: %" PRIu64 ", failed: %" PRIu64 "\n",
              s.ranges_compared, s.ranges_differed, s.ranges_failed);
  if (s.ranges_skipped > 0) {
    std::printf("ranges skipped: %" PRIu64
                " (in transition: a membership change moves them; repair again after it "
                "ends)\n",
                s.ranges_skipped);
  }
  std::printf("leaves differed: %" PRIu64 ", records read from replicas: %" PRIu64 " (%s)\n",
              s.leaves_differed, s.keys_fetched, Bytes(s.bytes_fetched).c_str());
  std::printf("keys streamed: %" PRIu64 " (%s)", s.keys_streamed, Bytes(s.bytes_streamed).c_str());
  for (size_t i = 0; i < s.streamed.size(); ++i) {
    const RepairStreamed& n = s.streamed[i];
    std::printf("%s to node %u: %" PRIu64 " (%s)", i == 0 ? ":" : ",", n.node_id, n.keys,
                Bytes(n.bytes).c_str());
  }
  std::printf("\n");
  std::printf("tree bytes exchanged: %s\n", Bytes(s.tree_bytes).c_str());
  std::printf("duration: %.2f s\n", s.duration_s);
  for (const std::string& f : s.failures) std::printf("failed: %s\n", f.c_str());
  // The fix for a node this repair could not bring back: its failures above say why.
  for (uint32_t id : s.still_need_repair) {
    std::printf(
        "node %u still needs repair: some of its ranges could not be repaired; if a failure above "
        "says a replica may have purged tombstones, or its disk was lost, rebuild it with "
        "'shardkv cluster start-node %u --rebuild', else run 'shardkv repair --node %u' again\n",
        id, id, id);
  }
  if (!s.complete()) std::printf("some range could not be repaired\n");
}

int DoRepair(const GlobalOptions& g, uint32_t node_id) {
  const std::string dir = AbsoluteDir(g.ClusterDir());
  std::unique_ptr<Admin> admin = AdminFor(g, dir);
  const bool terminal = StderrIsTerminal() && !g.json;
  RepairOptions options;
  options.node_id = node_id;
  auto progress = [&](const RepairProgress& p) {
    if (!terminal) return;
    std::fprintf(stderr,
                 "\rrepair: node %u (%u/%u nodes), %" PRIu64 "/%" PRIu64 " ranges, %" PRIu64
                 " keys streamed   ",
                 p.node_id, p.nodes_done, p.nodes_total, p.ranges_done, p.ranges_total,
                 p.keys_streamed);
    std::fflush(stderr);
  };
  auto summary = admin->Repair(
      options, progress, CallTo(AdminAddresses(g, dir), std::chrono::milliseconds(g.timeout_ms)));
  if (terminal) std::fprintf(stderr, "\n");
  if (!summary.ok()) {
    const int code =
        summary.status().code() == Status::Code::kUnavailable ? kExitUnreachable : kExitFailed;
    return ReportError(summary.status(), summary.status().code() == Status::Code::kInvalidArgument
                                             ? kExitUsage
                                             : code);
  }
  if (g.json) {
    std::printf("%s\n", SummaryJson(*summary).c_str());
  } else {
    PrintSummary(*summary);
  }
  return summary->complete() ? kExitOk : kExitFailed;
}

}  // namespace

void RegisterRepairCommand(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto node = std::make_shared<uint32_t>(0);
  auto* repair = app.add_subcommand(
      "repair",
      "Anti-entropy now: the replicas of every range compare hash trees of their data and "
      "exchange the differing keys, newest version wins (deletes included). Also brings back a "
      "node that needs repair, streaming only what it missed");
  repair->add_option("--node", *node,
                     "Repair only the ranges this node holds (it compares them with their other "
                     "replicas); default: every range of the cluster");
  repair->add_flag("--json", g->json, "JSON summary (schema in docs/cli.md)");
  repair->footer(
      "Nodes: --cluster HOST:PORT[,...] or the local cluster in --dir DIR. Ranges that a "
      "membership change moves are skipped and counted. A node that needs repair (its hints "
      "expired elsewhere) compares every range it holds first and serves again once all were "
      "compared; a range where another replica may have purged tombstones it lacks (a replica "
      "whose tombstone GC does not wait for repairs) is refused: rebuild that node with "
      "'shardkv cluster start-node N --rebuild', as after a lost disk. Exit codes: 0 completed "
      "(differences found and fixed included), 1 some range could not be repaired (a replica "
      "failed or refused, a node did not answer, or a node still needs repair), 2 usage, 3 "
      "cluster unreachable.");
  repair->callback([=] { *exit_code = DoRepair(*g, *node); });
}

}  // namespace shardkv::cli
