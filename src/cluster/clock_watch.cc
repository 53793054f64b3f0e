// ClockWatch (clock_watch.h).
#include "cluster/clock_watch.h"

#include <algorithm>
#include <cstdlib>

namespace shardkv::cluster {

void ClockWatch::Record(uint32_t peer, uint64_t sent_ms, uint64_t received_ms, uint64_t peer_ms) {
  if (peer == self_id_ || peer_ms == 0 || received_ms < sent_ms) return;
  // The peer read its clock somewhere in the round trip: the midpoint is the best guess, off by
  // at most half the round trip.
  const int64_t mid = static_cast<int64_t>(sent_ms + (received_ms - sent_ms) / 2);
  Sample s;
  s.offset_ms = mid - static_cast<int64_t>(peer_ms);
  s.error_ms = static_cast<int64_t>((received_ms - sent_ms + 1) / 2) + 1;
  s.at = std::chrono::steady_clock::now();
  common::MutexLock lock(&mu_);
  samples_[peer] = s;
}

ClockVerdict ClockWatch::Judge(const std::vector<uint32_t>& members) const {
  ClockVerdict v;
  const auto now = std::chrono::steady_clock::now();
  std::vector<int64_t> offsets, off;
  std::vector<uint32_t> disagreeing;
  {
    common::MutexLock lock(&mu_);
    for (uint32_t id : members) {
      if (id == self_id_) continue;
      auto it = samples_.find(id);
      if (it == samples_.end() || now - it->second.at > fresh_for_) continue;
      const Sample& s = it->second;
      offsets.push_back(s.offset_ms);
      if (std::llabs(s.offset_ms) - s.error_ms > static_cast<int64_t>(max_offset_ms_)) {
        disagreeing.push_back(id);
        off.push_back(s.offset_ms);
      } else {
        v.agreeing.push_back(id);
      }
    }
  }
  auto median = [](std::vector<int64_t> x) {
    if (x.empty()) return int64_t{0};
    std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(x.size() / 2), x.end());
    return x[x.size() / 2];
  };
  v.offset_ms = median(offsets);
  // A strict majority of the members (this node counts as agreeing with itself) sees it off.
  v.skewed = disagreeing.size() * 2 > members.size();
  if (v.skewed) {
    const int64_t by = median(off);
    std::string ids;
    for (uint32_t id : disagreeing) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
    v.reason = "clock is " + std::to_string(std::llabs(by)) + " ms " +
               (by > 0 ? "ahead of" : "behind") + " nodes " + ids + " (max_clock_offset_ms " +
               std::to_string(max_offset_ms_) + ")";
  }
  return v;
}

}  // namespace shardkv::cluster
