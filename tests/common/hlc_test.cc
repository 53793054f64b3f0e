#include "common/hlc.h"

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

namespace shardkv::common {
namespace {

struct FakeWallClock {
  std::shared_ptr<std::atomic<uint64_t>> ms = std::make_shared<std::atomic<uint64_t>>(1000);
  std::function<uint64_t()> Fn() const {
    auto p = ms;
    return [p] { return p->load(); };
  }
};

// Options on the fake clock (designated initializers would trip -Wmissing-field-initializers).
HlcOptions On(const FakeWallClock& wall) {
  HlcOptions o;
  o.physical_clock_ms = wall.Fn();
  return o;
}
HlcOptions On(const FakeWallClock& wall, std::function<Status(uint64_t)> persist,
              uint64_t initial_floor = 0) {
  HlcOptions o = On(wall);
  o.persist_ceiling = std::move(persist);
  o.initial_floor = initial_floor;
  return o;
}

uint64_t NowOrFail(HlcClock& clock) {
  auto ts = clock.Now();
  INFO(ts.status().ToString());
  REQUIRE(ts.ok());
  return *ts;
}

TEST_CASE("HLC packs physical ms and a 16-bit logical counter", "[hlc]") {
  constexpr uint64_t ts = HlcClock::Make(123456, 7);
  STATIC_REQUIRE(HlcClock::PhysicalMs(ts) == 123456);
  STATIC_REQUIRE(HlcClock::Logical(ts) == 7);
  STATIC_REQUIRE(HlcClock::Make(1, 0) > HlcClock::Make(0, 65535));
}

TEST_CASE("HLC Now is strictly increasing and follows the wall clock", "[hlc]") {
  FakeWallClock wall;
  HlcClock clock(On(wall));

  CHECK(NowOrFail(clock) == HlcClock::Make(1000, 0));
  CHECK(NowOrFail(clock) == HlcClock::Make(1000, 1));
  CHECK(NowOrFail(clock) == HlcClock::Make(1000, 2));

  wall.ms->store(1001);  // wall clock moves on: logical resets
  CHECK(NowOrFail(clock) == HlcClock::Make(1001, 0));

  wall.ms->store(500);  // wall clock steps back: HLC does not
  const uint64_t a = NowOrFail(clock);
  CHECK(a == HlcClock::Make(1001, 1));
  CHECK(clock.Last() == a);
}

TEST_CASE("HLC logical overflow carries into the physical part", "[hlc]") {
  FakeWallClock wall;
  HlcClock clock(On(wall));
  uint64_t prev = 0;
  for (uint64_t i = 0; i <= HlcClock::kLogicalMask + 1; ++i) {
    const uint64_t ts = NowOrFail(clock);
    REQUIRE(ts > prev);
    prev = ts;
  }
  CHECK(prev == HlcClock::Make(1001, 0));
}

TEST_CASE("HLC Update moves past a remote timestamp", "[hlc]") {
  FakeWallClock wall;
  HlcClock clock(On(wall));

  REQUIRE(clock.Update(HlcClock::Make(1200, 5)).ok());  // 200 ms ahead: accepted
  CHECK(NowOrFail(clock) == HlcClock::Make(1200, 6));

  REQUIRE(clock.Update(HlcClock::Make(900, 0)).ok());  // older: no effect
  CHECK(NowOrFail(clock) == HlcClock::Make(1200, 7));

  wall.ms->store(1300);
  CHECK(NowOrFail(clock) == HlcClock::Make(1300, 0));
}

TEST_CASE("HLC rejects timestamps beyond max_clock_offset", "[hlc]") {
  FakeWallClock wall;
  HlcOptions options = On(wall);
  options.max_clock_offset_ms = 500;
  HlcClock clock(options);
  const uint64_t before = clock.Last();

  const Status s = clock.Update(HlcClock::Make(1501, 0));
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("501 ms ahead") != std::string::npos);
  CHECK(s.message().find("max_clock_offset is 500 ms") != std::string::npos);
  CHECK(clock.Last() == before);
  CHECK(clock.CheckOffset(HlcClock::Make(1501, 0)).IsInvalidArgument());

  // Exactly max_clock_offset ahead is still accepted.
  CHECK(clock.Update(HlcClock::Make(1500, HlcClock::kLogicalMask)).ok());
  CHECK(NowOrFail(clock) == HlcClock::Make(1501, 0));
}

TEST_CASE("HLC persists a ceiling once per window and never hands out a timestamp above it",
          "[hlc]") {
  FakeWallClock wall;
  std::vector<uint64_t> persisted;
  HlcOptions options = On(wall, [&](uint64_t c) {
    persisted.push_back(c);
    return Status::OK();
  });
  options.ceiling_window_ms = 1000;
  HlcClock clock(options);

  uint64_t ts = NowOrFail(clock);
  REQUIRE(persisted == std::vector<uint64_t>{HlcClock::Make(2000, 0)});
  for (uint64_t ms = 1000; ms < 2000; ms += 7) {
    wall.ms->store(ms);
    ts = NowOrFail(clock);
    REQUIRE(ts < persisted.back());
  }
  CHECK(persisted.size() == 1);
  CHECK(clock.CeilingWrites() == 1);

  wall.ms->store(2000);  // reaching the ceiling forces a new one before the timestamp escapes
  ts = NowOrFail(clock);
  CHECK(ts == HlcClock::Make(2000, 0));
  REQUIRE(persisted.size() == 2);
  CHECK(persisted.back() == HlcClock::Make(3000, 0));
  CHECK(clock.Ceiling() == persisted.back());

  // Update past the ceiling persists too, so accepted remote timestamps are covered.
  REQUIRE(clock.Update(HlcClock::Make(2400, 0)).ok());
  CHECK(persisted.size() == 2);
  wall.ms->store(2600);
  REQUIRE(clock.Update(HlcClock::Make(3050, 0)).ok());
  REQUIRE(persisted.size() == 3);
  CHECK(persisted.back() == HlcClock::Make(4050, 0));
}

TEST_CASE("HLC does not advance when the ceiling cannot be persisted, and is unavailable",
          "[hlc]") {
  FakeWallClock wall;
  bool fail = true;
  HlcClock clock(
      On(wall, [&](uint64_t) { return fail ? Status::IOError("disk full") : Status::OK(); }));
  auto ts = clock.Now();
  REQUIRE_FALSE(ts.ok());
  // Unavailable, whatever the hook said: the node cannot stamp a write now, so a client tries
  // another node (client_core.cc fails over on Unavailable, not on IOError).
  CHECK(ts.status().code() == Status::Code::kUnavailable);
  CHECK(ts.status().message() == "persisting HLC ceiling: disk full");
  CHECK(clock.Last() == 0);
  CHECK_FALSE(clock.Update(HlcClock::Make(1100, 0)).ok());

  fail = false;
  CHECK(NowOrFail(clock) == HlcClock::Make(1000, 0));
}

TEST_CASE("HLC restarted from a persisted ceiling never goes backwards", "[hlc]") {
  FakeWallClock wall;
  uint64_t stored_ceiling = 0;
  auto persist = [&](uint64_t c) {
    stored_ceiling = c;
    return Status::OK();
  };
  uint64_t last_before_restart = 0;
  {
    HlcClock clock(On(wall, persist));
    for (int i = 0; i < 100; ++i) last_before_restart = NowOrFail(clock);
  }
  wall.ms->store(10);  // the wall clock was set back across the restart
  HlcClock restarted(On(wall, persist, stored_ceiling));
  const uint64_t first = NowOrFail(restarted);
  CHECK(first > last_before_restart);
  CHECK(first > HlcClock::Make(1000, 0));
}

TEST_CASE("HLC timestamps are unique across threads", "[hlc]") {
  HlcClock clock;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 20000;
  std::vector<std::vector<uint64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&clock, &out = seen[t]] {
      out.reserve(kPerThread);
      for (int i = 0; i < kPerThread; ++i) {
        auto ts = clock.Now();
        out.push_back(ts.ok() ? *ts : 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<uint64_t> all;
  for (const auto& v : seen) {
    CHECK(std::is_sorted(v.begin(), v.end()));  // per thread: increasing
    all.insert(all.end(), v.begin(), v.end());
  }
  std::sort(all.begin(), all.end());
  CHECK(all.front() != 0);
  CHECK(std::adjacent_find(all.begin(), all.end()) == all.end());
}

}  // namespace
}  // namespace shardkv::common
