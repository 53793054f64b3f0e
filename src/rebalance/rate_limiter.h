// RateLimiter: the one limiter of a destination node's incoming streams. `--rate R` is per
// destination (schedule.h): every stream task pulling into this node takes its bytes from this
// limiter, so the node receives at most R in total however many tasks run at once, and a
// throttle takes effect at the next batch (kvrocks's batch_sender owns its limiter the same way).
//
// A virtual clock (GCRA): each batch of b bytes moves the clock b/R forward from the later of
// now and where it stood, and the caller waits until the clock. A limiter idle for a while
// starts again from now, so no burst builds up while nothing streams.
//
// Thread-safety: thread-safe. Pure arithmetic on the times it is given, so tests need no clock.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/mutex.h"

namespace shardkv::rebalance {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;

  // Bytes per second; 0 = unlimited. The latest call wins (each stream slice carries the
  // change's current rate).
  void SetRate(uint64_t bytes_per_s);
  uint64_t rate() const;
  // Takes `bytes` that arrived at `now`; returns when the caller may pull the next batch (`now`
  // when within the rate, or unlimited).
  Clock::time_point Take(uint64_t bytes, Clock::time_point now);
  // When the next batch may be pulled (the epoch of the clock when unlimited or never used).
  Clock::time_point Ready() const;

 private:
  mutable common::Mutex mu_;
  uint64_t rate_ GUARDED_BY(mu_) = 0;
  Clock::time_point next_ GUARDED_BY(mu_){};
};

}  // namespace shardkv::rebalance
