// TokenRange: an inclusive range of 64-bit tokens, the unit placement changes move and storage
// scans. Inclusive on both ends so the whole ring, [0, UINT64_MAX], needs no 65-bit end.
#pragma once

#include <cstdint>

namespace shardkv {

struct TokenRange {
  uint64_t first = 0;
  uint64_t last = UINT64_MAX;

  bool Valid() const { return first <= last; }
  bool Contains(uint64_t token) const { return first <= token && token <= last; }
  friend bool operator==(const TokenRange&, const TokenRange&) = default;
};

}  // namespace shardkv
