// Planning, showing, confirming and beginning one change, whichever command asked for it
// (`cluster add-node`, `join`, `remove-node`, `set`): the part of membership_commands.cc that
// every change shares.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "change_guard.h"
#include "cluster_limits.h"
#include "global_options.h"
#include "shardkv/change.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {

struct ChangeFlags {
  double weight = 1.0;
  bool plan_only = false;
  bool yes = false;
  uint32_t rate_mb = limits::kDefaultRateMb;
  uint32_t streams = limits::kDefaultStreams;
  uint32_t wait_s = 60;
};

// Everything one change needs, whichever command started it.
struct ChangeJob {
  InterruptGuard* guard = nullptr;  // add-node: cleans up on a signal (else null)
  const ClusterMap* map = nullptr;  // the map the change starts from
  ChangeKind kind = ChangeKind::kAdd;
  uint32_t node_id = 0;
  uint32_t replicas = 0, write_quorum = 0, read_quorum = 0;  // params (0 keeps one)
  std::string address;                                       // add
  std::vector<std::string> askees;  // members to ask for the plan, in order
  // The command already checked that a majority of the members answer (add-node does, before
  // it starts the new node); else PlanAndBegin checks first.
  bool majority_checked = false;
  // Undoes what the command did before planning (add-node: the new node); runs when nothing
  // was begun.
  std::function<void()> undo = [] {};
  // Runs once the change began (add-node: record the node count).
  std::function<void()> on_begun = [] {};
};

// Without --yes (or --plan-only) the change needs a confirmation, which needs a terminal: refuse
// before anything is started or counted (prints the error; true when refused).
bool RefuseUnconfirmable(const ChangeFlags& f);
// The timeout of a probe (a status or map request to one node).
std::chrono::milliseconds ProbeTimeout(const GlobalOptions& g);
// Plan, show, confirm, begin. Returns the exit code.
int PlanAndBegin(const GlobalOptions& g, const ChangeFlags& f, const ChangeJob& c);
// Refuses (prints the error, --json outcome included; returns exit 3) unless a majority of
// `map`'s members answer: a change cannot commit without them. `what`: "add node 4". Returns 0
// when they do.
int RefuseWithoutMajority(const GlobalOptions& g, const ClusterMap& map, const std::string& what);
// The members to ask, from the newest map the directory's nodes (or --cluster) know.
StatusOr<ClusterMap> CurrentMap(const GlobalOptions& g, const std::string& dir,
                                const std::vector<std::string>& addresses);
// --weight (when `add`), --plan-only, --yes, --rate, --streams, --json.
void AddChangeFlags(CLI::App* cmd, GlobalOptions* g, ChangeFlags* f, bool add);

}  // namespace shardkv::cli
