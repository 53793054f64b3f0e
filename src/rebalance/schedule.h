// Stream scheduling: which stream tasks to start now, and at what rate (design.md
// "Rebalancing: the transition protocol", throttling). Pure functions, so the policy is testable
// without timing.
//
// `--rate R` is per destination node, as documented: each destination receives at most R in
// total, whatever the number of sources, because every task pulling into it takes its bytes from
// the destination's one limiter (rate_limiter.h; the driver sends each task the whole R). At most
// `streams` tasks run at once per destination; a source is not limited (a remove with one
// leaving node and three destinations streams to all three at once, so it sends up to 3R).
// R = 0 means unthrottled.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardkv::rebalance {

struct TaskSlot {
  uint32_t destination = 0;
  bool running = false;
  bool done = false;
  bool waiting = false;  // backing off after an error
};

// Indexes of the tasks to start now, in index order: not running, not done, not waiting, at most
// `streams` (>= 1) running per destination, and at most `free_workers` of them.
std::vector<size_t> PickTasksToStart(const std::vector<TaskSlot>& tasks, uint32_t streams,
                                     size_t free_workers);

// Worker threads for a change: enough for `streams` per destination, at most kMaxStreamWorkers,
// whatever the task count.
inline constexpr size_t kMaxStreamWorkers = 16;
size_t StreamWorkers(size_t tasks, size_t destinations, uint32_t streams);

}  // namespace shardkv::rebalance
