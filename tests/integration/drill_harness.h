// The harness of the rebalance fault drills (rebalance_drill_test.cc): the shardkv CLI run with a
// deadline for what only it does (a cluster directory of node processes: `cluster up`,
// `add-node`, `stop-node`, `start-node`, `load`, `verify`), shardkv::Admin for the changes (begin,
// status, throttle, cancel, resume, waiting for the end), a directory that cleans up after itself
// and keeps what a failed drill left, and direct looks at one node (testing/cluster_util.h).
//
// Every wait here is bounded, so a hung node or CLI fails a drill instead of hanging ctest.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/admin.h"
#include "shardkv/change.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "testing/cluster_util.h"
#include "testing/history_checker.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

namespace shardkv::drill {

// Printed with history results, so that a failure can be replayed with the same workload.
inline constexpr const char* kSeedsNote = "fixed seeds: load --seed 1, history checker seed 7";

using testing::PollUntil;
using testing::TestKeys;

// Failed assertions so far in this process (a Catch2 listener in drill_harness.cc counts them):
// a Drill compares the count at its start and end to decide whether to keep its directory.
int FailedAssertions();

// ---- Processes with a deadline ----------------------------------------------------------------

// A CLI run: exit code, output, and whether it was killed at its time limit (testing/subprocess.h).
using Proc = testing::ProcessResult;

// ---- Flat JSON --------------------------------------------------------------------------------

// How often `"key":"` (a non-null string value) occurs anywhere in `json`.
int CountStringField(const std::string& json, const std::string& key);

// ---- Change reports ---------------------------------------------------------------------------

// The moved fraction of a change: moved copies of all copies (0 without copies).
double MovedFraction(const ChangeReport& r);
// A report, field by field, for INFO.
std::string Text(const ChangeReport& r);
std::string Text(const AdminReply& r);

// ---- The cluster under test -------------------------------------------------------------------

// A cluster directory of node processes run by `shardkv --dir D`, its changes driven through
// admin(). On destruction: `cluster down`, then SIGKILL of any node process of this directory
// still running, then (if an assertion of this drill failed) a copy of the directory is kept and
// the node logs' tails are printed.
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

  // An Admin of every node of the directory (its seeds renewed on each call: nodes come and
  // go), expecting the directory's cluster (cluster.conf).
  Admin& admin() const;
  // The change's status (Admin::ChangeStatus).
  AdminReply Status() const;
  // Polls the status until `done` holds (testing::WaitChange).
  StatusOr<ChangeReport> WaitFor(const std::function<bool(const ChangeReport&)>& done,
                                 std::chrono::milliseconds limit) const;
  // Until the change ended; what `rebalance watch` waits for.
  StatusOr<ChangeReport> WaitEnded(
      std::chrono::milliseconds limit = std::chrono::seconds(240)) const;

  // Read from node `id`'s port and pid files ("" and pid 0 while a file is missing).
  std::string Address(int id) const;
  pid_t Pid(int id) const;
  // The addresses of every node directory with a port file, by id.
  std::vector<std::string> Addresses() const;
  // cluster_id= of cluster.conf (0 before `cluster up`).
  uint64_t ClusterId() const;

  std::string NodeLogTails(size_t lines) const;

 private:
  void KillLeftovers() const;
  void KeepForInspection() const;

  testing::TempDir dir_;
  const int failures_at_start_;
  mutable std::unique_ptr<Admin> admin_;
};

// SIGCONTs a stopped node however the drill ends, before the Drill's `cluster down`.
struct ContinueGuard {
  pid_t pid = 0;
  ~ContinueGuard();
};

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

using testing::LocallyHeld;
using testing::NodeMap;

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
