// What `cluster status` says about needs repair (design.md "Needs repair"): read from each
// answering node's stats, and judged per node from all of them, so a node marked while it was
// away is shown even before it learned it, or while it is down.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/client.h"

namespace shardkv::cli {

// What one node reported (stats counter rebuilt_at_ms, info needs_repair_reason and
// repair_marks "3:1733150000000,5:...").
struct RepairReport {
  std::optional<std::string> reason;   // it needs repair itself: why
  std::map<uint32_t, uint64_t> marks;  // nodes it marked -> newest expired write (Unix ms)
  uint64_t rebuilt_at_ms = 0;          // its last rebuild's start; 0: never
};

RepairReport ReadRepairReport(const NodeStatsSnapshot& stats);

struct RepairVerdict {
  bool needs_repair = false;
  std::string reason;               // "" unless needs_repair
  std::vector<uint32_t> marked_by;  // answering nodes holding a mark its rebuild did not retire
};

// The verdict on node `id`: `own` is its own report (null if it did not answer as itself),
// `reports` those of every answering node of this cluster, by node id.
RepairVerdict JudgeRepair(uint32_t id, const RepairReport* own,
                          const std::map<uint32_t, RepairReport>& reports);

// The fix for node `id` that needs repair: `shardkv repair` (after starting it, unless `up`),
// which streams only what it missed; `rebuild` (rebuild_check.h RebuildAdvice) for a lost disk or
// a range the repair refuses (another replica may have purged tombstones it lacks).
std::string RepairAdvice(uint32_t id, bool up, const std::string& rebuild);

}  // namespace shardkv::cli
