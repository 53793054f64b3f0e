#include "rebalance/schedule.h"

#include <algorithm>
#include <map>

namespace shardkv::rebalance {

std::vector<size_t> PickTasksToStart(const std::vector<TaskSlot>& tasks, uint32_t streams,
                                     size_t free_workers) {
  streams = std::max<uint32_t>(1, streams);
  std::map<uint32_t, uint32_t> busy;
  for (const TaskSlot& t : tasks) {
    if (t.running) ++busy[t.destination];
  }
  std::vector<size_t> out;
  for (size_t i = 0; i < tasks.size() && out.size() < free_workers; ++i) {
    const TaskSlot& t = tasks[i];
    if (t.running || t.done || t.waiting) continue;
    uint32_t& n = busy[t.destination];
    if (n >= streams) continue;
    ++n;
    out.push_back(i);
  }
  return out;
}

size_t StreamWorkers(size_t tasks, size_t destinations, uint32_t streams) {
  const size_t wanted = std::max<size_t>(1, destinations) * std::max<uint32_t>(1, streams);
  return std::clamp<size_t>(std::min(wanted, tasks), 1, kMaxStreamWorkers);
}

}  // namespace shardkv::rebalance
