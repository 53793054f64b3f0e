#include "common/hlc.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>

namespace shardkv::common {

HlcClock::HlcClock(HlcOptions options) : options_(std::move(options)) {
  last_ = options_.initial_floor;
  // The floor itself was durable (it is the ceiling loaded from disk), so timestamps up to it
  // need no new write; anything above it does.
  ceiling_ = options_.initial_floor;
}

uint64_t HlcClock::WallClockMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

uint64_t HlcClock::PhysicalNowMs() const {
  return options_.physical_clock_ms ? options_.physical_clock_ms() : WallClockMs();
}

Status HlcClock::EnsureCeilingAboveLocked(uint64_t ts, uint64_t physical_now_ms) {
  if (!options_.persist_ceiling || ts < ceiling_) return Status::OK();
  // Place the new ceiling a whole window past both the wall clock and `ts`, so the next write is
  // needed only after about ceiling_window_ms of wall time (or a jump forward by Update()).
  const uint64_t base_ms = std::max(PhysicalMs(ts), physical_now_ms);
  const uint64_t new_ceiling = Make(base_ms + std::max<uint64_t>(options_.ceiling_window_ms, 1), 0);
  Status s = options_.persist_ceiling(new_ceiling);
  // Unavailable whatever the hook's code: a clock that cannot persist its ceiling hands out no
  // timestamps, so this node cannot coordinate a write now, and a client tries another node.
  if (!s.ok()) return Status::Unavailable("persisting HLC ceiling: " + s.message());
  ceiling_ = new_ceiling;
  ++ceiling_writes_;
  return Status::OK();
}

StatusOr<uint64_t> HlcClock::Now() {
  const uint64_t physical_now_ms = PhysicalNowMs();
  MutexLock lock(&mu_);
  const uint64_t next = std::max(last_ + 1, Make(physical_now_ms, 0));
  SHARDKV_RETURN_IF_ERROR(EnsureCeilingAboveLocked(next, physical_now_ms));
  last_ = next;
  return next;
}

Status HlcClock::CheckOffset(uint64_t remote) const {
  const uint64_t physical_now_ms = PhysicalNowMs();
  const uint64_t remote_ms = PhysicalMs(remote);
  if (remote_ms > physical_now_ms && remote_ms - physical_now_ms > options_.max_clock_offset_ms) {
    return Status::InvalidArgument("HLC timestamp " + std::to_string(remote) + " is " +
                                   std::to_string(remote_ms - physical_now_ms) +
                                   " ms ahead of the local clock; max_clock_offset is " +
                                   std::to_string(options_.max_clock_offset_ms) +
                                   " ms (check NTP on the sending node)");
  }
  return Status::OK();
}

Status HlcClock::Update(uint64_t remote) {
  const uint64_t physical_now_ms = PhysicalNowMs();
  MutexLock lock(&mu_);
  // A timestamp this clock has already passed needs no move, so it is never "too far ahead",
  // even when it is ahead of the wall clock (after a restart the clock starts at the persisted
  // ceiling, up to ceiling_window_ms ahead, and clients echo those timestamps back).
  if (remote <= last_) return Status::OK();
  SHARDKV_RETURN_IF_ERROR(CheckOffset(remote));
  SHARDKV_RETURN_IF_ERROR(EnsureCeilingAboveLocked(remote, physical_now_ms));
  last_ = remote;
  return Status::OK();
}

uint64_t HlcClock::Last() const {
  MutexLock lock(&mu_);
  return last_;
}

uint64_t HlcClock::Ceiling() const {
  MutexLock lock(&mu_);
  return ceiling_;
}

uint64_t HlcClock::CeilingWrites() const {
  MutexLock lock(&mu_);
  return ceiling_writes_;
}

}  // namespace shardkv::common
