#include "cluster_init.h"

#include <unistd.h>

#include <cstdio>
#include <future>
#include <iostream>
#include <map>
#include <set>

#include "cli_common.h"
#include "cluster_limits.h"
#include "cluster_status.h"
#include "cluster_up.h"
#include "kv_io.h"
#include "local_cluster.h"
#include "shardkv/admin.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {
namespace {

using namespace limits;

// Fills the defaults of `cluster up` and checks the flags against each other and against the
// map (a dry run with ids 1..N), so that bad input is refused before any node is contacted.
Status ResolveInitFlags(InitFlags* f, ClusterParams* params) {
  const auto n = static_cast<uint32_t>(f->addresses.size());
  if (n == 0) return Status::InvalidArgument("cluster init needs the nodes' HOST:PORT addresses");
  if (n > kMaxNodes) {
    return Status::InvalidArgument("at most " + std::to_string(kMaxNodes) +
                                   " nodes can form a cluster at once (" + std::to_string(n) +
                                   " given); join the others afterwards");
  }
  std::set<std::string> seen;
  for (const std::string& a : f->addresses) {
    if (!seen.insert(a).second) return Status::InvalidArgument("address " + a + " is given twice");
  }
  if (f->replicas == 0) f->replicas = std::min<uint32_t>(3, n);
  if (f->replicas > n) {
    return Status::InvalidArgument("--replicas " + std::to_string(f->replicas) + " exceeds the " +
                                   std::to_string(n) + " node(s) given");
  }
  if (f->write_quorum == 0) f->write_quorum = f->replicas / 2 + 1;
  if (f->read_quorum == 0) f->read_quorum = f->replicas / 2 + 1;
  if (f->write_quorum > f->replicas || f->read_quorum > f->replicas) {
    return Status::InvalidArgument(
        "--write-quorum and --read-quorum must be between 1 and --replicas (" +
        std::to_string(f->replicas) + ")");
  }
  auto mode = ParsePlacementMode(f->mode);
  if (!mode.ok()) return mode.status();
  *params =
      ClusterParams{*mode, f->vnodes, f->shards, f->replicas, f->write_quorum, f->read_quorum};
  std::vector<ClusterNode> placeholder;
  for (uint32_t i = 0; i < n; ++i) {
    placeholder.push_back({i + 1, f->addresses[i], 1.0, NodeState::kUp});
  }
  auto dry = ClusterMap::Create(1, *params, std::move(placeholder), 1);
  return dry.ok() ? Status::OK() : dry.status();
}

// What a node is now, for the table: "unformed" or "standalone, empty" (an older node's one-node
// map); else the refusal.
std::string NowColumn(const NodeProbe& p) {
  if (p.unformed) return "unformed";
  if (p.map) return "standalone (cluster " + std::to_string(p.map->cluster_id()) + "), empty";
  return "answers";
}

struct Checked {
  std::vector<ClusterNode> nodes;  // in the order given, with the ids the nodes report
  std::vector<std::pair<std::string, Status>> refusals;  // address, why
};

Checked CheckNodes(const std::vector<NodeProbe>& probes) {
  Checked c;
  std::map<uint32_t, std::string> by_id;
  for (const NodeProbe& p : probes) {
    if (Status s = FormableNode(p); !s.ok()) {
      c.refusals.emplace_back(p.address, s);
      continue;
    }
    const uint32_t id = ReportedNodeId(p);
    if (auto [it, fresh] = by_id.emplace(id, p.address); !fresh) {
      c.refusals.emplace_back(
          p.address, Status::FailedPrecondition(p.address + " and " + it->second +
                                                " both report node id " + std::to_string(id) +
                                                ": every node of a cluster needs its own id "
                                                "(shardkv-node --id), or the same node is listed "
                                                "under two addresses"));
      continue;
    }
    c.nodes.push_back({id, p.address, 1.0, NodeState::kUp});
  }
  return c;
}

void PrintPlan(std::FILE* out, const InitFlags& f, const std::vector<NodeProbe>& probes,
               const Checked& c) {
  std::fprintf(out,
               "a new cluster of %zu node(s): %s mode, %s, replicas %u, write quorum %u, read "
               "quorum %u (epoch 1, claimant %s)\n",
               probes.size(), f.mode.c_str(),
               f.mode == "ring" ? (std::to_string(f.vnodes) + " vnodes per node").c_str()
                                : (std::to_string(f.shards) + " shards").c_str(),
               f.replicas, f.write_quorum, f.read_quorum, f.addresses.front().c_str());
  std::map<std::string, const Status*> refused;
  for (const auto& [address, why] : c.refusals) refused.emplace(address, &why);
  std::fprintf(out, "%6s  %-21s  %s\n", "ID", "ADDRESS", "NOW");
  for (const NodeProbe& p : probes) {
    const uint32_t id = ReportedNodeId(p);
    const std::string id_text = id == 0 ? "-" : std::to_string(id);
    auto it = refused.find(p.address);
    std::string now = NowColumn(p);
    if (it != refused.end()) {
      // The refusal names the node; the row already does.
      std::string why = it->second->message();
      for (const std::string& prefix : {p.address + " (node " + id_text + ") ", p.address + " "}) {
        if (why.rfind(prefix, 0) == 0) {
          why = why.substr(prefix.size());
          break;
        }
      }
      now = "REFUSED: " + why;
    }
    std::fprintf(out, "%6s  %-21s  %s\n", id_text.c_str(), p.address.c_str(), now.c_str());
  }
}

int ExitFor(const Status& s) {
  if (s.code() == Status::Code::kUnavailable || s.code() == Status::Code::kTimeout ||
      s.code() == Status::Code::kUnauthenticated) {
    return kExitUnreachable;
  }
  return kExitFailed;
}

}  // namespace

int DoInit(const GlobalOptions& g, InitFlags f) {
  ClusterParams params;
  if (Status s = ResolveInitFlags(&f, &params); !s.ok()) return ReportError(s, kExitUsage);
  // A confirmation needs a terminal: refuse before any node is contacted.
  if (!f.yes && isatty(STDIN_FILENO) != 1) {
    return ReportError(
        "not forming the cluster: stdin is not a terminal, so there is nobody to confirm; pass "
        "--yes to form it",
        kExitUsage);
  }
  AdminOptions o;
  o.seeds = f.addresses;
  o.timeout_ms = g.timeout_ms;
  g.credentials.ApplyTo(&o);
  auto admin = Admin::Create(o);
  if (!admin.ok()) return ReportError(admin.status(), kExitUsage);

  Progress("probing " + std::to_string(f.addresses.size()) + " node(s)");
  std::vector<std::future<NodeProbe>> pending;
  for (const std::string& a : f.addresses) {
    // Admin::Probe sends no cluster id and so may run concurrently on one Admin.
    pending.push_back(std::async(std::launch::async, [&admin, a] { return (*admin)->Probe(a); }));
  }
  std::vector<NodeProbe> probes;
  for (auto& p : pending) probes.push_back(p.get());
  const Checked checked = CheckNodes(probes);
  std::FILE* table = g.json ? stderr : stdout;  // with --json stdout holds one JSON object
  PrintPlan(table, f, probes, checked);
  std::fflush(table);
  if (!checked.refusals.empty()) {
    int code = kExitFailed;
    for (const auto& [address, why] : checked.refusals) {
      if (ExitFor(why) == kExitUnreachable) code = kExitUnreachable;
    }
    const Status& first = checked.refusals.front().second;
    const std::string why =
        "not forming the cluster (nothing changed): " + std::to_string(checked.refusals.size()) +
        " of " + std::to_string(probes.size()) + " node(s) refused; " + first.message();
    if (g.json) std::cout << OutcomeErrorJson(MutationOutcome::kNotApplied, why) << std::endl;
    return ReportError(why, code);
  }
  const std::string warning = FailureToleranceWarning(static_cast<uint32_t>(probes.size()),
                                                      f.replicas, f.write_quorum, f.read_quorum);
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  if (!f.yes) {
    std::fprintf(stderr, "\nType 'yes' to form this cluster: ");
    std::fflush(stderr);
    std::string answer;
    std::getline(std::cin, answer);
    if (answer != "yes") {
      if (g.json) {
        std::cout << OutcomeErrorJson(MutationOutcome::kNotApplied, "declined") << std::endl;
      }
      Progress("aborted: nothing changed");
      return kExitFailed;
    }
  }
  auto formed = (*admin)->FormCluster(checked.nodes, params);
  if (!formed.ok()) {
    // FormCluster repeats the checks; one that fails now (a node changed since the probe)
    // installed nothing. A failure after the checks may leave earlier nodes formed.
    const MutationOutcome outcome = ClassifyMutation(formed.status());
    const bool unknown = outcome == MutationOutcome::kIndeterminate;
    const std::string why =
        (unknown ? "the cluster may be partly formed (check with 'shardkv cluster status'): "
                 : "the cluster was not formed: ") +
        formed.status().message();
    if (g.json) std::cout << OutcomeErrorJson(outcome, why) << std::endl;
    return ReportError(why, unknown ? kExitIndeterminate : ExitFor(formed.status()));
  }
  Progress("formed cluster " + std::to_string(formed->cluster_id()) + " (epoch 1, " +
           std::to_string(formed->nodes().size()) + " node(s))");
  GlobalOptions shown = g;
  shown.cluster = f.addresses;
  shown.cluster_id = formed->cluster_id();
  NodeProber prober(g.credentials);
  const int rc = PrintClusterStatus(shown, shown.ClusterDir(), &prober,
                                    MutationOutcomeName(MutationOutcome::kApplied));
  if (!warning.empty()) std::fprintf(stderr, "%s\n", warning.c_str());
  return rc;
}

void RegisterInitCommand(CLI::App* cluster, GlobalOptions* g, int* exit_code) {
  auto f = std::make_shared<InitFlags>();
  auto* init = cluster->add_subcommand(
      "init",
      "Form a new cluster (epoch 1) from running, empty shardkv-node processes anywhere, as "
      "'redis-cli --cluster create' does. Every node is probed first; nothing changes if any does "
      "not answer (exit 3), already belongs to a cluster, holds data, or reports the id of "
      "another (exit 1). Shows the cluster to form and asks to type 'yes' (or pass --yes), then "
      "prints its status (with --json, the 'cluster status --json' object). The cluster gets a "
      "new random id; the nodes keep the ids they were started with (--id).");
  init->add_option("NODES", f->addresses,
                   "The nodes' addresses, HOST:PORT, comma separated (the first drives changes "
                   "first, as claimant)")
      ->required()
      ->delimiter(',')
      ->check(CLI::Validator([](std::string& a) { return CheckHostPort(a); }, ""))
      ->type_name("HOST:PORT,...");
  init->add_option("--mode", f->mode, "Placement: ring (hash ring) or jump (jump hash + shard map)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ring", "jump"}));
  init->add_option("--replicas", f->replicas, "Replication factor R (default min(3, N))")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  init->add_option("--write-quorum", f->write_quorum, "Write quorum W (default R/2+1)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  init->add_option("--read-quorum", f->read_quorum, "Read quorum Q (default R/2+1)")
      ->check(CLI::Range(kMinNodes, kMaxNodes));
  init->add_option("--vnodes", f->vnodes, "Ring mode: virtual nodes per node")
      ->capture_default_str()
      ->check(CLI::Range(kMinVnodes, kMaxVnodes));
  init->add_option("--shards", f->shards, "Jump mode: number of shards")
      ->capture_default_str()
      ->check(CLI::Range(kMinShards, kMaxShards));
  init->add_flag("--yes,-y", f->yes, "Form the cluster without asking (required off a terminal)");
  init->add_flag("--json", g->json,
                 "Print the formed cluster's status as JSON, with \"outcome\" (on error: "
                 "{\"outcome\",\"error\"}; exit 4 when it may be partly formed)");
  init->callback([f, g, exit_code] { *exit_code = DoInit(*g, *f); });
}

}  // namespace shardkv::cli
