#include "rebalance/rate_limiter.h"

#include <algorithm>

namespace shardkv::rebalance {

void RateLimiter::SetRate(uint64_t bytes_per_s) {
  common::MutexLock lock(&mu_);
  rate_ = bytes_per_s;
}

uint64_t RateLimiter::rate() const {
  common::MutexLock lock(&mu_);
  return rate_;
}

RateLimiter::Clock::time_point RateLimiter::Take(uint64_t bytes, Clock::time_point now) {
  common::MutexLock lock(&mu_);
  if (rate_ == 0) return now;
  // In ns; 128-bit so that a large batch at a low rate cannot overflow.
  const auto cost = std::chrono::nanoseconds(
      static_cast<int64_t>(static_cast<unsigned __int128>(bytes) * 1000000000u / rate_));
  next_ = std::max(next_, now) + std::chrono::duration_cast<Clock::duration>(cost);
  return next_;
}

RateLimiter::Clock::time_point RateLimiter::Ready() const {
  common::MutexLock lock(&mu_);
  return rate_ == 0 ? Clock::time_point{} : next_;
}

}  // namespace shardkv::rebalance
