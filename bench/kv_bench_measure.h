// shardkv-bench's measurement: the latency histogram, CPU accounting of this process, the
// server and the machine, and Run, the state of one phase shared by the drivers' threads (each
// logical client's progress and the error budget). Split from kv_bench.cc.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kv_bench_workload.h"

namespace kv_bench {

// More errors than this end the run early: a broken target should not spin for the whole
// duration, and a callback that fails synchronously must not recurse without bound.
constexpr uint64_t kMaxErrors = 100;

// Log-linear latency histogram in nanoseconds: 64 linear sub-buckets per power of two, so any
// reported percentile is within 1.6% of the true value. 32-bit counts keep it at 8 KiB, small
// enough to have one per logical client.
class Histogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 40;  // about 18 minutes; anything longer is clamped
  static constexpr size_t kBuckets = static_cast<size_t>(kMaxExp - kSubBits + 2) * kSub;

  void Record(uint64_t ns) {
    ++counts_[Index(ns)];
    ++total_;
    sum_ += ns;
    max_ = std::max(max_, ns);
  }

  void Merge(const Histogram& other) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
  }

  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }
  double mean() const { return total_ ? static_cast<double>(sum_) / total_ : 0; }

  // The value below which a fraction q of the samples lie (bucket midpoint).
  double Percentile(double q) const {
    if (total_ == 0) return 0;
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total_)));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const auto [lo, hi] = Bounds(i);
        return std::min<double>(static_cast<double>(max_), (lo + hi) / 2.0);
      }
    }
    return static_cast<double>(max_);
  }

 private:
  static size_t Index(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    int e = 63 - std::countl_zero(v);  // >= kSubBits
    if (e > kMaxExp) {
      e = kMaxExp;
      v = (uint64_t{1} << (kMaxExp + 1)) - 1;
    }
    const uint64_t sub = (v >> (e - kSubBits)) & (kSub - 1);
    return static_cast<size_t>(e - kSubBits + 1) * kSub + sub;
  }

  static std::pair<double, double> Bounds(size_t index) {
    if (index < kSub) return {static_cast<double>(index), static_cast<double>(index) + 1};
    const int e = static_cast<int>(index / kSub) - 1 + kSubBits;
    const uint64_t sub = index % kSub;
    const double width = std::ldexp(1.0, e - kSubBits);
    const double lo = std::ldexp(1.0, e) + static_cast<double>(sub) * width;
    return {lo, lo + width};
  }

  std::array<uint32_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

// Seconds of CPU (user + system) used by this process so far.
double ProcessCpuSeconds();

// Seconds of CPU used by another local process (the server), from /proc/PID/stat; nullopt if it
// cannot be read.
std::optional<double> OtherProcessCpuSeconds(int pid);

// CPU seconds all processes on the machine have spent busy (not idle or waiting for I/O), from
// /proc/stat. The cores are shared with whatever else runs, so the report says how much of the
// machine was busy besides client and server.
std::optional<double> MachineBusyCpuSeconds();

enum class Outcome { kOk, kMiss, kError };

// One logical client's progress. The lock is uncontended except with pipelining on several
// shardkv network threads; both targets take it on every completion so the cost is the same.
struct ClientState {
  std::mutex mu;
  uint64_t next = 0;  // index of the next op to issue
  uint64_t quota = 0;
  uint64_t completed = 0;
  uint64_t misses = 0;
  uint64_t errors = 0;
  Histogram latency;
};

// The state of one phase, shared by the drivers' threads.
class Run {
 public:
  Run(const Workload& workload, int clients, std::optional<Clock::time_point> end)
      : workload_(workload), end_(end) {
    for (int c = 0; c < clients; ++c) {
      clients_.push_back(std::make_unique<ClientState>());
      clients_.back()->quota = workload.Quota(static_cast<uint64_t>(c));
    }
  }

  int clients() const { return static_cast<int>(clients_.size()); }
  std::optional<Clock::time_point> end() const { return end_; }
  bool aborted() const { return abort_.load(std::memory_order_relaxed); }

  // The first op(s) of client c. False once the client has nothing (more) to issue.
  bool Start(int c, Clock::time_point now, Op* op) {
    ClientState& s = *clients_[c];
    std::lock_guard lock(s.mu);
    return TakeNext(c, s, now, op);
  }

  // Records a completion of client c and picks its next op, under one lock.
  bool Finish(int c, Clock::time_point start, Clock::time_point now, Outcome outcome,
              std::string_view error, Op* next) {
    ClientState& s = *clients_[c];
    bool stop_all = false;
    bool more;
    {
      std::lock_guard lock(s.mu);
      if (outcome == Outcome::kError) {
        ++s.errors;
      } else {
        ++s.completed;
        if (outcome == Outcome::kMiss) ++s.misses;
        s.latency.Record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count()));
      }
      more = TakeNext(c, s, now, next);
    }
    if (outcome == Outcome::kError) {
      const uint64_t errors = total_errors_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (errors == 1) {
        std::lock_guard lock(error_mu_);
        first_error_ = std::string(error);
      }
      if (errors >= kMaxErrors) stop_all = true;
    }
    if (stop_all) Abort();
    return more && !stop_all;
  }

  void Abort() { abort_.store(true, std::memory_order_relaxed); }

  std::string first_error() const {
    std::lock_guard lock(error_mu_);
    return first_error_;
  }

  // REQUIRES: every request of the phase has completed.
  void Totals(Histogram* latency, uint64_t* completed, uint64_t* misses, uint64_t* errors) const {
    *completed = *misses = *errors = 0;
    for (const auto& s : clients_) {
      std::lock_guard lock(s->mu);
      latency->Merge(s->latency);
      *completed += s->completed;
      *misses += s->misses;
      *errors += s->errors;
    }
  }

 private:
  bool TakeNext(int c, ClientState& s, Clock::time_point now, Op* op) {
    if (aborted() || s.next >= s.quota || (end_ && now >= *end_)) return false;
    *op = workload_.At(static_cast<uint64_t>(c), s.next++);
    return true;
  }

  const Workload& workload_;
  const std::optional<Clock::time_point> end_;
  std::vector<std::unique_ptr<ClientState>> clients_;
  std::atomic<bool> abort_{false};
  std::atomic<uint64_t> total_errors_{0};
  mutable std::mutex error_mu_;
  std::string first_error_;  // GUARDED_BY(error_mu_)
};

}  // namespace kv_bench
