// A stream task's checkpoint at the destination, written after every applied batch under meta key
// Key(change, task) and read when the task is called again (a later slice, a restart of the
// destination, a takeover by another driver). Encoded as a Cap'n Proto message with a format
// version (stream_checkpoint.capnp); Decode also reads the space-separated text of v0.1.0
// (read-only: nothing writes it any more).
//
// Thread-safety: a value type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::rebalance {

// Bump when a change would be misread by a reader of the previous version; an older node then
// refuses the task (NotSupported) instead of restarting it from nothing. Version 0 is the v0.1.0
// text.
inline constexpr uint32_t kStreamCheckpointFormatVersion = 1;

struct StreamCheckpoint {
  // phase 0: pulling from the task's first source; phase 1: merging from merge_ids in turn,
  // merge_index the current one (Decode guarantees it is in range in phase 1).
  int phase = 0;
  std::string cursor;  // the source's scan cursor within range `range_index`
  bool done = false;
  uint64_t copies = 0, tombstones = 0, bytes = 0;
  std::vector<uint32_t> merge_ids;
  size_t merge_index = 0;
  size_t range_index = 0;  // the task's range `cursor` belongs to (for the current source)
  uint64_t copies_during_change = 0;

  static std::string Key(uint64_t change, uint64_t task);
  std::string Encode() const;
  // NotSupported for a newer format version, Corruption for bytes that are neither form.
  static StatusOr<StreamCheckpoint> Decode(std::string_view bytes);
};

}  // namespace shardkv::rebalance
