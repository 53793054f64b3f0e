// HealthMonitor: whether a node's storage works, and its recovery without a restart
// (design.md "Storage format": Storage health).
//
// An episode begins with the first I/O error of any kind a RocksDB call or RocksDB's background
// work reports (no space, a read-only or failing file system) and is logged once, with the error.
// It ends when a write succeeds again, or when the recovery thread's probe passes: while an
// episode lasts, the thread wakes every `interval`, and the probe (storage_health.cc) writes a
// file through RocksDB's file system, resumes RocksDB if a background error stopped its writes
// (DB::Resume), and makes a synced write. The end is logged once too. Between the two the node
// refuses to coordinate writes (KvService), /readyz says why, and stats carry the error.
//
// Thread-safety: every method may be called concurrently, except that StartRecovery and
// StopRecovery must not race each other. The probe runs on the recovery thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "common/mutex.h"
#include "shardkv/status.h"

namespace shardkv::storage {

// A storage's health as Storage::Health() reports it.
struct StorageHealth {
  bool failing = false;   // storage operations fail with I/O errors: an episode is on
  bool no_space = false;  // the episode's first error was a full disk (ENOSPC)
  // What failed first in the episode, with RocksDB's words (they name the file and the system
  // error, e.g. "... Read-only file system"); empty while !failing.
  std::string error;
  uint64_t failing_since_ms = 0;  // wall clock (Unix ms) when the episode began; 0 while !failing
  uint64_t failures = 0;          // episodes since Open
  uint64_t io_errors = 0;         // operations that failed with an I/O error since Open
};

class HealthMonitor {
 public:
  // `path` and `node_id` go into the log lines; `wall_ms` stamps episodes; `interval` is the
  // recovery thread's period.
  HealthMonitor(std::string path, uint32_t node_id, std::function<uint64_t()> wall_ms,
                std::chrono::milliseconds interval);
  ~HealthMonitor();  // StopRecovery()
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // An operation failed with an I/O error (`what`: the operation and RocksDB's error). Begins
  // an episode unless one is on. `no_space`: the error was ENOSPC.
  void OnIoError(std::string_view what, bool no_space);
  // RocksDB reported a background error: its writes stop until it is resumed.
  void OnBackgroundError(std::string_view what, bool no_space);
  // RocksDB says it left its background error state (its own recovery, or a Resume).
  void OnBackgroundRecovered() { rocks_stopped_.store(false); }
  // True from a background error until RocksDB says it recovered.
  bool rocks_stopped() const { return rocks_stopped_.load(); }
  // A write succeeded: ends an episode, unless RocksDB stopped after a background error (a
  // write that was already past RocksDB's check when a flush failed must not end it).
  void OnWriteOk() {
    if (failing_.load(std::memory_order_relaxed) && !rocks_stopped_.load()) {
      End("a write succeeded");
    }
  }

  bool failing() const { return failing_.load(std::memory_order_relaxed); }
  bool no_space() const { return no_space_.load(std::memory_order_relaxed); }
  uint64_t io_errors() const { return io_errors_.load(std::memory_order_relaxed); }
  StorageHealth Report() const;

  // Starts the recovery thread: while an episode is on, every `interval` it runs `probe`, and an
  // OK ends the episode, unless another I/O error was reported while the probe ran.
  void StartRecovery(std::function<Status()> probe);
  // Stops and joins the recovery thread (idempotent). After it returns the probe is not running.
  void StopRecovery();

 private:
  void End(std::string_view how);
  void RecoveryLoop();

  const std::string path_;
  const uint32_t node_id_;
  const std::function<uint64_t()> wall_ms_;
  const std::chrono::milliseconds interval_;

  std::atomic<bool> failing_{false};
  std::atomic<bool> no_space_{false};
  std::atomic<bool> rocks_stopped_{false};
  std::atomic<uint64_t> io_errors_{0};

  mutable common::Mutex mu_;
  std::condition_variable cv_;  // an episode began, or stop
  std::string error_ GUARDED_BY(mu_);
  uint64_t since_ms_ GUARDED_BY(mu_) = 0;
  uint64_t failures_ GUARDED_BY(mu_) = 0;
  uint64_t errors_at_start_ GUARDED_BY(mu_) = 0;  // io_errors_ when the episode began
  bool stop_ GUARDED_BY(mu_) = false;

  std::function<Status()> probe_;
  std::thread thread_;
};

}  // namespace shardkv::storage
