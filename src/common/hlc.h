// HlcClock: a hybrid logical clock (Kulkarni et al., "Logical Physical Clocks", 2014).
//
// A timestamp is one uint64: the physical wall-clock milliseconds in the high 48 bits and a
// logical counter in the low 16 bits (`physical_ms << 16 | logical`). Packing both into one
// integer makes timestamps compare with `<`, and lets "the next timestamp" be `last + 1`: when
// the logical counter overflows (65536 timestamps within one millisecond) the carry simply moves
// the physical part one millisecond ahead of the wall clock, which HLC allows.
//
// Guarantees:
//   - Now() is strictly increasing across calls on one clock, even if the wall clock steps back.
//   - After Update(t) succeeds, every later Now() is > t. This is how a coordinator moves past
//     the highest timestamp a client has seen, and how a replica moves past a coordinator's.
//   - Update(t) refuses a t whose physical part is more than max_clock_offset_ms ahead of the
//     local wall clock, so one node with a runaway clock cannot drag the cluster into the future.
//   - With a persist_ceiling hook (Storage installs one backed by its `meta` column family),
//     every timestamp the clock hands out or accepts is below a durably recorded ceiling. A
//     restarted clock built with initial_floor = that ceiling therefore never goes backwards,
//     even if the wall clock was set back across the restart.
//
// Example: wall clock at 1000 ms. Now() -> 1000<<16|0, Now() -> 1000<<16|1. Update(1200<<16|5)
// (200 ms ahead, within the 500 ms offset) -> next Now() is 1200<<16|6 until the wall clock
// passes 1200 ms.
//
// Thread-safety: all methods are safe to call concurrently. The persist hook is called with the
// clock's internal lock held (so no timestamp can escape before its ceiling is durable); it must
// not call back into the clock.
#pragma once

#include <cstdint>
#include <functional>

#include "common/mutex.h"
#include "shardkv/status.h"

namespace shardkv::common {

struct HlcOptions {
  // Update() rejects remote timestamps more than this far ahead of the local wall clock.
  uint64_t max_clock_offset_ms = 500;

  // How far ahead of the clock each persisted ceiling is placed. A larger window means fewer
  // ceiling writes (one per window of wall time) but a bigger forward jump after a restart.
  uint64_t ceiling_window_ms = 1000;

  // Milliseconds since the Unix epoch. Null means the system wall clock. Tests inject a fake.
  std::function<uint64_t()> physical_clock_ms;

  // Durably records `ceiling` (an HLC timestamp) before any timestamp >= the previous ceiling is
  // handed out or accepted. Null means no persistence (tests, tools). If it fails, the clock does
  // not advance past the old ceiling, and Now()/Update() return Unavailable with the hook's
  // message (the next call that needs a new ceiling tries to persist it again).
  std::function<Status(uint64_t ceiling)> persist_ceiling;

  // The clock starts strictly above this timestamp (the ceiling loaded from disk at startup).
  uint64_t initial_floor = 0;
};

class HlcClock {
 public:
  static constexpr int kLogicalBits = 16;
  static constexpr uint64_t kLogicalMask = (uint64_t{1} << kLogicalBits) - 1;

  explicit HlcClock(HlcOptions options = {});
  HlcClock(const HlcClock&) = delete;
  HlcClock& operator=(const HlcClock&) = delete;

  // A new timestamp, greater than every timestamp this clock returned or accepted before.
  // Fails (Unavailable) only if the ceiling hook fails.
  [[nodiscard]] StatusOr<uint64_t> Now();

  // Moves the clock past `remote` so that later Now() calls return larger timestamps.
  // Returns InvalidArgument if `remote` is more than max_clock_offset_ms ahead of the local wall
  // clock (the clock is left unchanged), or Unavailable if the ceiling hook fails.
  [[nodiscard]] Status Update(uint64_t remote);

  // Checks `remote` against max_clock_offset_ms without changing the clock.
  [[nodiscard]] Status CheckOffset(uint64_t remote) const;

  // The largest timestamp returned by Now() or accepted by Update() (or initial_floor).
  uint64_t Last() const;

  // The ceiling last persisted through the hook, or initial_floor if none was written yet.
  uint64_t Ceiling() const;

  // Number of times the ceiling hook was called successfully. For tests and metrics.
  uint64_t CeilingWrites() const;

  static constexpr uint64_t Make(uint64_t physical_ms, uint64_t logical) {
    return (physical_ms << kLogicalBits) | (logical & kLogicalMask);
  }
  static constexpr uint64_t PhysicalMs(uint64_t ts) { return ts >> kLogicalBits; }
  static constexpr uint64_t Logical(uint64_t ts) { return ts & kLogicalMask; }

  // The system wall clock in milliseconds since the Unix epoch.
  static uint64_t WallClockMs();

 private:
  uint64_t PhysicalNowMs() const;
  // Makes sure `ts` is below the durable ceiling, persisting a new one if needed.
  Status EnsureCeilingAboveLocked(uint64_t ts, uint64_t physical_now_ms) REQUIRES(mu_);

  const HlcOptions options_;
  mutable Mutex mu_;
  uint64_t last_ GUARDED_BY(mu_) = 0;
  uint64_t ceiling_ GUARDED_BY(mu_) = 0;
  uint64_t ceiling_writes_ GUARDED_BY(mu_) = 0;
};

}  // namespace shardkv::common
