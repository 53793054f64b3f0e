#include "repair_status.h"

#include <algorithm>
#include <cstdlib>

#include "shardkv/stats.h"

namespace shardkv::cli {
namespace {

std::map<uint32_t, uint64_t> ParseRepairMarks(const std::string& text) {
  std::map<uint32_t, uint64_t> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(at, comma - at);
    const size_t colon = item.find(':');
    if (colon != std::string::npos) {
      char* end = nullptr;
      const unsigned long long id = std::strtoull(item.c_str(), &end, 10);
      const unsigned long long ms = std::strtoull(item.c_str() + colon + 1, nullptr, 10);
      if (end == item.c_str() + colon && id > 0 && id <= UINT32_MAX) {
        out[static_cast<uint32_t>(id)] = ms;
      }
    }
    at = comma + 1;
  }
  return out;
}

}  // namespace

RepairReport ReadRepairReport(const NodeStatsSnapshot& stats) {
  RepairReport r;
  if (auto it = stats.info.find(std::string(stats::needs_repair_reason));
      it != stats.info.end() && !it->second.empty()) {
    r.reason = it->second;
  }
  if (auto it = stats.info.find(std::string(stats::repair_marks)); it != stats.info.end()) {
    r.marks = ParseRepairMarks(it->second);
  }
  if (auto it = stats.counters.find(std::string(stats::rebuilt_at_ms));
      it != stats.counters.end() && it->second > 0) {
    r.rebuilt_at_ms = static_cast<uint64_t>(it->second);
  }
  return r;
}

RepairVerdict JudgeRepair(uint32_t id, const RepairReport* own,
                          const std::map<uint32_t, RepairReport>& reports) {
  RepairVerdict v;
  const uint64_t rebuilt = own != nullptr ? own->rebuilt_at_ms : 0;
  for (const auto& [marker, report] : reports) {
    // A mark of a write older than the node's last rebuild is retired: the rebuild pulled it.
    if (auto mark = report.marks.find(id); mark != report.marks.end() && mark->second > rebuilt) {
      v.marked_by.push_back(marker);
    }
  }
  if (own != nullptr && own->reason) {
    v.reason = *own->reason;
  } else if (!v.marked_by.empty()) {
    std::string ids;
    for (uint32_t m : v.marked_by) ids += (ids.empty() ? "" : ", ") + std::to_string(m);
    v.reason = (v.marked_by.size() == 1 ? "node " : "nodes ") + ids +
               " dropped hinted writes for it that outlived the tombstone grace";
  }
  v.needs_repair = !v.reason.empty();
  return v;
}

std::string RepairAdvice(uint32_t id, bool up, const std::string& rebuild) {
  return std::string(up ? "" : "start it, then ") + "run 'shardkv repair --node " +
         std::to_string(id) + "' to bring it back (or, if its disk was lost or repair refuses a " +
         "range: " + rebuild + ")";
}

}  // namespace shardkv::cli
