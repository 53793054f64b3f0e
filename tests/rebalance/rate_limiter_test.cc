// The destination's one stream limiter (rate_limiter.h), on given times: no clock, no sleeps.
#include "rebalance/rate_limiter.h"

#include <catch2/catch.hpp>

using shardkv::rebalance::RateLimiter;
using namespace std::chrono_literals;

TEST_CASE("rate limiter: every task into a destination shares one rate", "[rebalance][limiter]") {
  const RateLimiter::Clock::time_point t0{1000s};
  SECTION("unlimited: never waits") {
    RateLimiter l;
    CHECK(l.Take(1 << 30, t0) == t0);
    CHECK(l.Ready() == RateLimiter::Clock::time_point{});
  }
  SECTION("two tasks taking at the same instant wait in turn: the sum keeps to the rate") {
    RateLimiter l;
    l.SetRate(1000);                       // bytes/s
    CHECK(l.Take(500, t0) == t0 + 500ms);  // task A
    CHECK(l.Take(500, t0) == t0 + 1s);     // task B, same instant: after A's share
    CHECK(l.Ready() == t0 + 1s);
    // 100 batches of 250 bytes, each taken as soon as allowed: 25,000 bytes at 1000 B/s, 25 s.
    RateLimiter m;
    m.SetRate(1000);
    RateLimiter::Clock::time_point last = t0;
    for (int i = 0; i < 100; ++i) last = m.Take(250, std::max(t0, m.Ready() - 1ms));
    CHECK(last == t0 + 25s);
  }
  SECTION("an idle limiter starts from now: no burst saved up") {
    RateLimiter l;
    l.SetRate(1000);
    CHECK(l.Take(1000, t0) == t0 + 1s);
    CHECK(l.Take(1000, t0 + 60s) == t0 + 61s);
  }
  SECTION("a throttle applies to the next batch") {
    RateLimiter l;
    l.SetRate(1000);
    CHECK(l.Take(1000, t0) == t0 + 1s);
    l.SetRate(4000);
    CHECK(l.Take(1000, t0 + 1s) == t0 + 1250ms);
    l.SetRate(0);
    CHECK(l.Take(1000, t0 + 1s) == t0 + 1s);  // unthrottled from now on
    CHECK(l.Ready() == RateLimiter::Clock::time_point{});
  }
  SECTION("a huge batch at a tiny rate does not overflow") {
    RateLimiter l;
    l.SetRate(1);
    CHECK(l.Take(uint64_t{1} << 33, t0) == t0 + std::chrono::seconds(uint64_t{1} << 33));
  }
}
