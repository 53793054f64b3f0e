// HistoryChecker: a workload that records what it did and checks that a shardkv cluster kept its
// promises (design.md "Testing", the history checker; the rules are in history_validator.h).
//
// It drives the cluster only through the public Client API. Writer threads overwrite and delete
// keys with a per-key version counter (each key has exactly one writer, so its versions are
// ordered by issue order and the client's HLC makes each later write win); reader threads read
// random keys. Every loop is bounded by both HistoryOptions::duration and max_ops_per_thread.
//
// Typical use:
//   HistoryChecker checker(client_options, {.keys = 50, .duration = 1500ms});
//   REQUIRE(checker.Start().ok());
//   ... kill nodes, migrate ranges, collect tombstones ...
//   checker.Wait();                          // or Stop() to end early
//   CHECK(checker.FinalCheck().ok());        // message lists the first violations
//   CHECK(checker.stats().failed == 0);      // where the scenario promises no client errors
//
// Failed requests are never violations by themselves: a write that returned an error may or may
// not have been applied, and the checks accept either. They are counted in stats() instead,
// because some scenarios promise none and others expect some.
//
// Thread-safety: stats(), WaitUntil() and Violations() may be called from any thread at any time;
// Start(), Wait(), Stop() and FinalCheck() from one controlling thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "shardkv/client.h"
#include "shardkv/options.h"
#include "shardkv/status.h"
#include "testing/history_validator.h"

namespace shardkv::testing {

struct HistoryOptions {
  int keys = 100;
  int writers = 2;  // keys are partitioned among them: key i belongs to writer i % writers
  int readers = 2;
  double delete_fraction = 0.1;  // share of writes that are deletes
  std::chrono::milliseconds duration{2000};
  uint64_t max_ops_per_thread = 100000;
  uint64_t seed = 1;
  Consistency consistency = Consistency::kDefault;  // of the workload's reads and writes
  // Check invariant 1 on the workload's reads. It assumes read and write quorums overlap
  // (R + W > RF); with `one` on a replicated cluster a stale read is allowed, so turn it off.
  bool check_reads = true;
  // The final check's reads; kAll so that it sees every replica's copy.
  Consistency final_consistency = Consistency::kAll;
  std::string key_prefix = "hist/";  // keys are <prefix><index>; distinct per concurrent checker
  size_t value_bytes = 64;
  // A final read that fails is retried up to this many attempts per key, all within
  // final_timeout.
  int final_attempts = 5;
  std::chrono::milliseconds final_timeout{30000};
};

struct HistoryStats {
  uint64_t acked = 0;        // writes acknowledged
  uint64_t failed = 0;       // writes that returned an error (applied or not: unknown)
  uint64_t reads = 0;        // reads answered with a value or NotFound
  uint64_t read_errors = 0;  // reads that returned any other error
  std::string last_error;    // the most recent failed request, for test diagnostics
};

class HistoryChecker {
 public:
  HistoryChecker(ClientOptions client_options, HistoryOptions options);
  ~HistoryChecker();  // Stop()s
  HistoryChecker(const HistoryChecker&) = delete;
  HistoryChecker& operator=(const HistoryChecker&) = delete;

  // Connects one client per thread and starts the workload; returns once it runs.
  // InvalidArgument on bad options; the Connect error if a client cannot connect.
  // REQUIRES: called once.
  Status Start();

  // Waits until every thread ended by itself (duration or op count reached), then checks every
  // recorded read (invariant 1, unless !check_reads). Idempotent.
  void Wait();
  // Ends the workload early, then Wait()s. Idempotent.
  void Stop();

  // Blocks until done(stats()) holds or `timeout` passes; returns whether it held. Re-evaluated
  // whenever a request completes, so a test can act "after 200 acknowledged writes" without
  // sleeping. Returns done(stats()) at once if the workload has ended.
  bool WaitUntil(const std::function<bool(const HistoryStats&)>& done,
                 std::chrono::milliseconds timeout) const;

  // Stop()s, then reads every key through a new client (so it also works after nodes moved or
  // restarted) and checks invariants 2 and 3. `client_options` replaces the ones given at
  // construction, e.g. to name the seeds of restarted nodes. Returns OK if every key was read and
  // no violation was found so far (of reads or of this or an earlier final check);
  // FailedPrecondition with the count and the first violations otherwise; Unavailable naming a
  // key whose final read kept failing. May be called again (say, after tombstone GC).
  Status FinalCheck(std::optional<ClientOptions> client_options = std::nullopt);

  // Every violation found so far, one readable line each (key, versions, times).
  std::vector<std::string> Violations() const;
  HistoryStats stats() const;

  // The recorded history, one entry per key in key order. REQUIRES: Wait() or Stop() returned.
  std::vector<KeyHistory> Histories() const;
  std::string KeyName(int index) const;

 private:
  void RunWriter(int writer, Client* client);
  void RunReader(int reader, Client* client);
  Micros Now() const;
  HistoryStats StatsLocked() const;  // REQUIRES: mu_ held
  bool ShouldRun(uint64_t ops_done) const;

  const ClientOptions client_options_;
  const HistoryOptions options_;
  std::chrono::steady_clock::time_point start_time_;
  std::chrono::steady_clock::time_point deadline_;

  std::vector<std::string> keys_;                 // set by Start(), then immutable
  std::vector<std::unique_ptr<Client>> clients_;  // one per thread; owned by the control thread
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  bool started_ = false;
  bool joined_ = false;

  std::atomic<uint64_t> acked_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> reads_{0};
  std::atomic<uint64_t> read_errors_{0};

  mutable std::mutex mu_;
  // Notified after each request is recorded; the counters change under mu_, so no wakeup is lost.
  mutable std::condition_variable progress_cv_;
  // Guarded by mu_: a write is appended at issue and updated at completion by its key's writer;
  // reads are appended by readers; the checks read it only after the threads are joined.
  std::vector<KeyHistory> histories_;
  std::vector<std::string> violations_;  // guarded by mu_
  std::string last_error_;               // guarded by mu_
  int running_ = 0;                      // guarded by mu_: threads not yet finished
};

}  // namespace shardkv::testing
