// RepairScheduler: background anti-entropy on every node (design.md "Anti-entropy"). Hinted
// handoff and read repair only mend what passed through the write path, and a manual `shardkv
// repair` only runs when someone runs it; this walks the ranges the node drives (those it is the
// first replica of, as a whole-cluster repair asks, so each range is compared by one node) with
// RepairService::RunBackgroundStep, one range at a time, so every range is compared with its
// other replicas once within `period`.
//
// - Pacing: a pass spreads its n ranges evenly over the period (range i is due at
//   start + (i + 1/2) * period / n), so the load is flat rather than a burst per period; the next
//   pass starts one period after this one started.
// - Restarts: the pass's position (its wall-clock start, the token it continues from, whether it
//   is still clean, the last full pass's time) is kept in `meta` (kPositionKey, unsynced) after
//   every step, and a restarted node resumes that pass rather than beginning at range 0: a node
//   restarted more often than its period would otherwise compare only its first ranges. On
//   resuming, i is recounted as the driven ranges before that token under the map of the day, so
//   a map changed meanwhile re-paces the rest over what is left of the period; a pass older than
//   its period (the node was down longer) compares what is left at once, at the rate. A pass
//   completed before the stop starts its successor one period after its own start, as without
//   the restart. A lost or unreadable record only costs the old behaviour: a fresh pass.
//   A catch-up (below) is not resumed: what it compared is known in memory only, so once this
//   node needs repair its pass begins again at range 0, and compares every range it holds
//   within one period.
// - Throttle: after a range of k keys (this node's count; every replica scans as many to build
//   its tree), the next one waits at least (k + kRangeCostKeys) / rate seconds: a range costs its
//   tree rounds with every replica however few keys it holds, so many small ranges (vnodes) with
//   a short period do not become hundreds of comparisons a second. A pass the rate stretches
//   past its period is logged (at most once per kWarnInterval).
// - Clients first: while client requests arrive (more than kBusyRequestsPerSecond over the last
//   step and its wait), the rate is divided by kBusyRateDivisor. At the full default rate a
//   pass cost a 9:1 client load 24% of its throughput on two cores (bench/README.md
//   "Anti-entropy"); a pass under load takes longer instead, and says so in the log when it
//   overruns its period. The range-cost floor is divided too: it stands for work as real as
//   the keys'.
// - Skips: RepairService's rules. While this node needs repair its steps are its catch-up: every
//   range it holds (not only those it drives), each compared with all its other replicas unless
//   one may have purged a tombstone it lacks, and the mark is cleared once all were (design.md
//   "Needs repair"). Ranges a membership change moves are skipped; replicas that need repair are
//   left out.
// - After a range failed (a replica unreachable, refusing, or known to need repair), the next
//   step first asks every peer for its needs-repair marks, and keeps doing so until all answer.
//   A node cut off longer than the tombstone grace is marked by the others meanwhile, but learns
//   it only from their stats; without this, its first comparisons after the partition heals
//   (before its once-a-second poll) would push values whose deletes the others collected. The
//   window left is the few milliseconds between that poll and the step's first request.
// - Figures: passes completed, and the wall time of the last pass in which every range was
//   compared and none failed or was skipped (`repair_last_full_ms`): then every range was
//   compared with all its replicas between that pass's start and its end.
// - Failed ranges (a replica down fails every range of every pass) are logged at most once per
//   kWarnInterval, with how many were not.
// - Stop: wakes the thread; a range under way finishes first (the node closes its peer
//   connections before, so a comparison waiting for a peer fails at once).
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "rebalance/repair_service.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

struct RepairSchedulerOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds period{24 * 3600 * 1000};
  uint64_t rate = 10000;  // keys a second, at most (>= 1)
  int nice = 10;          // the thread's CPU priority, as the repair service's
  // Wall clock (Unix ms) for repair_last_full_ms.
  std::function<uint64_t()> wall_ms;
  // Asks every peer for its needs-repair marks (RepairState::PollPeers); returns how many did
  // not answer. Null: never asked.
  std::function<size_t()> refresh_marks;
  // Client requests this node has answered so far (a counter). Null: never busy.
  std::function<uint64_t()> client_requests;
  // Where the pass position is kept across restarts (`meta`); null, or no wall_ms: not kept.
  storage::Storage* storage = nullptr;
};

// The position of a background pass, as kept in `meta` (RepairScheduler::kPositionKey) as
// "<start_ms> <next token | done> <clean 0|1> <last_full_ms>".
struct RepairPassPosition {
  uint64_t start_ms = 0;      // wall clock (Unix ms) when the pass started
  uint64_t next = 0;          // the token it continues from (unused once complete)
  bool complete = false;      // every range visited: the next pass is due at start + period
  bool clean = true;          // every range so far compared, none failed or skipped
  uint64_t last_full_ms = 0;  // repair_last_full_ms when it was saved

  std::string Encode() const;
  // InvalidArgument if `text` is not an encoded position.
  static StatusOr<RepairPassPosition> Decode(std::string_view text);
  friend bool operator==(const RepairPassPosition&, const RepairPassPosition&) = default;
};

// The time a step's work allows before the next step: `cost_keys` at `rate` keys a second, or
// at rate / kBusyRateDivisor while clients sent more than kBusyRequestsPerSecond a second.
std::chrono::duration<double> RepairStepWait(uint64_t cost_keys, uint64_t rate,
                                             double client_requests_per_second);

class RepairScheduler {
 public:
  static constexpr std::chrono::seconds kWarnInterval{60};
  static constexpr uint64_t kRangeCostKeys = 250;
  static constexpr double kBusyRequestsPerSecond = 100;
  static constexpr uint64_t kBusyRateDivisor = 5;
  static constexpr std::string_view kPositionKey = "repair/background_pass";

  // REQUIRES: `service` outlives the scheduler (Stop() first).
  RepairScheduler(RepairSchedulerOptions options, RepairService* service);
  ~RepairScheduler();

  void Start();
  void Stop();  // idempotent; joins

  // Counters repair_passes and repair_last_full_ms (shardkv/stats.h).
  void AddCounters(std::map<std::string, int64_t>* counters) const;

 private:
  // A pass under way (owned by the scheduler's thread).
  struct PassState {
    std::chrono::steady_clock::time_point start;
    RepairPassPosition position;  // position.start_ms: start on the wall clock
    size_t done = 0;              // ranges visited so far (recounted when resumed)
    bool catch_up = false;        // began as this node's catch-up, in this process
  };
  enum class PassEnd { kComplete, kStopped, kRefused };

  void Loop();
  // Runs `pass` on from its position, updating it as it goes.
  PassEnd Pass(PassState* pass);
  // The position kept in `meta`, if any (a record that does not decode is logged and ignored).
  std::optional<RepairPassPosition> LoadPosition();
  void SavePosition(const RepairPassPosition& position);
  // The steady-clock time of wall-clock `ms` (no later than now: a clock set back since does
  // not push a pass into the future).
  std::chrono::steady_clock::time_point SteadyOf(uint64_t ms) const;
  // Waits until `when`; false if Stop() was called.
  bool SleepUntil(std::chrono::steady_clock::time_point when);
  // Logs failed ranges at most once per kWarnInterval.
  void NoteFailures(const net::RepairReport& report);

  const RepairSchedulerOptions o_;
  RepairService* service_;
  std::atomic<uint64_t> passes_{0};
  std::atomic<uint64_t> last_full_ms_{0};
  // Owned by the scheduler's thread.
  std::chrono::steady_clock::time_point last_warn_{};
  std::chrono::steady_clock::time_point last_late_log_{};
  uint64_t unlogged_failures_ = 0;
  uint64_t busy_steps_ = 0;  // steps of this pass throttled for client load
  std::string refused_;      // the refusal last logged ("" when taking part)
  // A range failed since the last poll every peer answered. True at start: the node's poll
  // before serving may have missed a peer (a restart inside a partition), and its first step
  // must not push values a mark it has not seen would forbid.
  bool doubt_ = true;

  common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shardkv::rebalance
