// The harness of the rebalance fault drills (rebalance_drill_test.cc): the shardkv CLI run with a
// deadline, a cluster directory that cleans up after itself and keeps what a failed drill left,
// the fields of `rebalance status --json`, polling with deadlines, and direct looks at what one
// node holds (its map, its own store) that the CLI does not show.
//
// Every wait here is bounded, so a hung node or CLI fails a drill instead of hanging ctest.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "testing/history_checker.h"
#include "testing/temp_dir.h"

namespace shardkv::drill {

// Printed with history results, so that a failure can be replayed with the same workload.
inline constexpr const char* kSeedsNote = "fixed seeds: load --seed 1, history checker seed 7";

// SHARDKV_TEST_KEYS, or `fallback` when it is unset or empty.
int TestKeys(int fallback);

// Failed assertions so far in this process (a Catch2 listener in drill_harness.cc counts them):
// a Drill compares the count at its start and end to decide whether to keep its directory.
int FailedAssertions();

// ---- Processes with a deadline ----------------------------------------------------------------

struct Proc {
  int exit_code = -1;  // -1: not started, killed by a signal, or timed out
  bool timed_out = false;
  std::string out;
  std::string err;
  std::string Text() const;  // all of the above, for INFO
};

// Runs argv (no shell) with stdin from /dev/null; SIGKILLs it if it runs past `limit`.
Proc RunFor(const std::vector<std::string>& argv, std::chrono::milliseconds limit);

// Polls `done` every `every` until it holds or `limit` passes; returns whether it held.
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit,
               std::chrono::milliseconds every = std::chrono::milliseconds(100));

// ---- Flat JSON --------------------------------------------------------------------------------
// The first `"key":` in the text, wherever it is nested: enough for the CLI's top-level fields,
// which all precede the nested arrays, and for one object cut out of an array.

double JsonNumber(const std::string& json, const std::string& key);       // NaN if absent or null
std::string JsonString(const std::string& json, const std::string& key);  // "" if absent

// How often `"key":"` (a non-null string value) occurs anywhere in `json`.
int CountStringField(const std::string& json, const std::string& key);

// `rebalance status --json`, parsed.
struct RebalanceStatus {
  Proc proc;
  std::string state, kind, error;
  double node_id = 0, planned_copies = 0, moved_copies = 0, total_copies = 0;
  double remapped_keys = 0, ideal_fraction = 0, moved_fraction = 0, client_errors = 0;
  double resumed_tasks = 0, epoch = 0, driver = 0;
  bool ok() const { return proc.exit_code == 0 && !state.empty(); }
  bool Ended() const { return state == "done" || state == "failed" || state == "cancelled"; }
};

RebalanceStatus ParseStatus(Proc p);

// One entry of `rebalance status --json`'s streams[] (a source -> destination pair).
struct StreamEntry {
  double source = 0, destination = 0, ranges_total = 0, ranges_done = 0;
  double copies_planned = 0, copies_done = 0;
};

std::vector<StreamEntry> ParseStreams(const std::string& json);

// ---- The cluster under test -------------------------------------------------------------------

// A cluster directory driven through `shardkv --dir D`. On destruction: `cluster down`, then
// SIGKILL of any node process of this directory still running, then (if an assertion of this
// drill failed) a copy of the directory is kept and the node logs' tails are printed.
class Drill {
 public:
  Drill();
  ~Drill();
  Drill(const Drill&) = delete;
  Drill& operator=(const Drill&) = delete;

  const std::string& dir() const { return dir_.path(); }

  Proc Cli(std::vector<std::string> args,
           std::chrono::milliseconds limit = std::chrono::seconds(180)) const;
  // Through one node only (`--cluster ADDRESS`), not the directory.
  Proc CliVia(const std::string& address, std::vector<std::string> args,
              std::chrono::milliseconds limit = std::chrono::seconds(60)) const;
  // Cli() that must succeed, for steps whose output matters only when they fail: REQUIREs exit 0,
  // with the command and its output as the failure's context.
  void CliOk(std::vector<std::string> args) const;

  RebalanceStatus Status() const;
  RebalanceStatus StatusVia(const std::string& address) const;
  // Polls `rebalance status` until `done` holds; returns the last status seen.
  RebalanceStatus PollStatus(const std::function<bool(const RebalanceStatus&)>& done,
                             std::chrono::milliseconds limit, bool* held) const;

  // Read from node `id`'s port and pid files (port 0, pid 0 while a file is missing).
  std::string Address(int id) const;
  pid_t Pid(int id) const;

  std::string NodeLogTails(size_t lines) const;

 private:
  void KillLeftovers() const;
  void KeepForInspection() const;

  testing::TempDir dir_;
  const int failures_at_start_;
};

// SIGCONTs a stopped node however the drill ends, before the Drill's `cluster down`.
struct ContinueGuard {
  pid_t pid = 0;
  ~ContinueGuard();
};

// `rebalance watch`, bounded.
Proc Watch(const Drill& d, std::chrono::milliseconds limit = std::chrono::seconds(240));

// The load of a drill: `count` keys of `value_size` bytes, fixed seed, and the cluster shape.
struct Load {
  int count = 0;
  size_t value_size = 100;
  std::string mode = "ring";
  std::vector<std::string> up_flags;  // extra `cluster up` flags
  std::vector<std::string> Flags() const;
};

// `cluster up` with RF 3, then `load`; both must succeed.
void Up(Drill& d, int nodes, const Load& load);
// `verify` of the whole load.
void Verify(const Drill& d, const Load& load);

// ---- One node, directly -----------------------------------------------------------------------

// The map `address` holds (nullopt if it does not answer).
std::optional<ClusterMap> NodeMap(const std::string& address);
// The epoch of the map `address` holds (nullopt if it does not answer).
std::optional<uint64_t> NodeEpoch(const std::string& address);
// How many of `keys` node `address` holds in its own store (replica read, no coordination).
int LocallyHeld(const std::string& address, const ClusterMap& map,
                const std::vector<std::string>& keys);

// Polls (every 250 ms) until every node of `map` answers with one epoch; returns whether it did.
// `epochs` gets what each node answered last, for INFO.
bool PollOneEpoch(const ClusterMap& map, std::chrono::milliseconds limit, std::string* epochs);

// Local wall-clock time as the node logs print it (HH:MM:SS.mmm), to line test events up with
// node.log lines.
std::string WallClock();

// ---- The history checker ----------------------------------------------------------------------

// A client of nodes `ids` of the drill's cluster.
ClientOptions ClientFor(const Drill& d, const std::vector<int>& ids);
// A history that runs until the drill Stop()s it.
testing::HistoryOptions LongHistory();
// Waits up to 30 s for 100 more acknowledged writes; returns whether they came.
bool HundredMoreAcked(const testing::HistoryChecker& checker);
// "acked A failed F reads R read errors E last error L", for INFO and WARN.
std::string HistoryText(const testing::HistoryStats& stats);
// The first 100 of `violations`, then the replicas `map` gives each violated key.
std::string ListViolations(const std::vector<std::string>& violations, const ClusterMap& map);

}  // namespace shardkv::drill
