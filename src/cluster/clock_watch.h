// ClockWatch: this node's clock offset to the other members, measured on the gossip round trips
// (the responder's wall clock in each reply, NTP-style, as CockroachDB does on its RPCs), and
// the verdict whether this node's clock is off the cluster's (design.md "Clock offsets").
//
// A node is skewed when a majority of the members (itself included, which always agrees with
// itself) has a fresh measurement showing it off by more than max_clock_offset_ms beyond the
// measurement's own error (half the round trip). Such a node must not assign timestamps: its
// writes would be refused, or win over later ones.
//
// Thread-safety: thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/mutex.h"

namespace shardkv::cluster {

struct ClockVerdict {
  bool skewed = false;
  // This node's clock minus the others' (the median over fresh measurements; 0 with none).
  int64_t offset_ms = 0;
  std::vector<uint32_t> agreeing;  // peers within the offset: healthy coordinators for it
  std::string reason;              // when skewed
};

class ClockWatch {
 public:
  ClockWatch(uint32_t self_id, uint64_t max_offset_ms, std::chrono::milliseconds fresh_for)
      : self_id_(self_id), max_offset_ms_(max_offset_ms), fresh_for_(fresh_for) {}

  // One round trip to `peer`: sent at `sent_ms`, answered at `received_ms` (this node's wall
  // clock), the peer's wall clock `peer_ms` as it answered.
  void Record(uint32_t peer, uint64_t sent_ms, uint64_t received_ms, uint64_t peer_ms);
  // The verdict over `members` (the map's node ids, this node included).
  ClockVerdict Judge(const std::vector<uint32_t>& members) const;

 private:
  struct Sample {
    int64_t offset_ms;  // this node minus the peer
    int64_t error_ms;   // half the round trip, plus 1 for the clocks' resolution
    std::chrono::steady_clock::time_point at;
  };

  const uint32_t self_id_;
  const uint64_t max_offset_ms_;
  const std::chrono::milliseconds fresh_for_;
  mutable common::Mutex mu_;
  std::map<uint32_t, Sample> samples_ GUARDED_BY(mu_);
};

}  // namespace shardkv::cluster
