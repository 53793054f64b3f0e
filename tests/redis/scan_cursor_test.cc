// The Redis SCAN cursor codec and the node-scoped ranges (design.md "Scans"): cursors fit in 53
// bits, decode to what they encode, scoped ranges tile the token space in both placement modes,
// and node-scoped DBSIZE shares add up to the total.
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "redis/cluster_commands.h"
#include "redis/scan_commands.h"

using namespace shardkv::redis;

namespace {

constexpr uint64_t kSafe = uint64_t{1} << 53;

// The last token of a ring (UINT64_MAX) and of jump maps of a few shard counts.
const std::vector<uint64_t> kLastTokens = {UINT64_MAX, (uint64_t{1024} << 32) - 1,
                                           (uint64_t{130} << 32) - 1, (uint64_t{1} << 32) - 1,
                                           (uint64_t{16384} << 32) - 1};

}  // namespace

TEST_CASE("redis scan cursor: plain and scoped cursors fit 53 bits and round-trip", "[redis]") {
  for (uint64_t last : kLastTokens) {
    INFO("last token " << last);
    const ScanCursor start = DecodeCursor(0, last);
    CHECK(start.token == 0);
    CHECK(start.last == last);
    CHECK_FALSE(start.scoped);
    // The largest plain position still names a token of the space, and its cursor is safe.
    const uint64_t max_plain = last / start.unit;
    CHECK(max_plain < kScopedCursorFlag);
    const ScanCursor p = DecodeCursor(EncodeCursor(start, max_plain), last);
    CHECK(p.token == max_plain * start.unit);
    CHECK(p.token <= last);

    const ScanCursor s = ScopedStart(last, 5461, 10922);
    CHECK(s.scoped);
    CHECK(s.token == SlotFirstToken(last, 5461));
    CHECK(s.last == SlotLastToken(last, 10922));
    const uint64_t position = s.last / s.unit;  // the last position of the range
    const uint64_t cursor = EncodeCursor(s, position);
    CHECK(cursor < kSafe);
    CHECK(cursor != 0);
    const ScanCursor d = DecodeCursor(cursor, last);
    CHECK(d.scoped);
    CHECK(d.end_slot == 10922);
    CHECK(d.last == s.last);
    CHECK(d.token == position * s.unit);
    CHECK(d.unit == s.unit);
  }
  // A cursor of the previous release (a raw token at or above 2^53) resumes at that token.
  const ScanCursor legacy = DecodeCursor(kSafe + 12345, UINT64_MAX);
  CHECK(legacy.token == kSafe + 12345);
  CHECK_FALSE(legacy.scoped);
  CHECK(DecodeCursor(UINT64_MAX, UINT64_MAX).token == UINT64_MAX);
}

TEST_CASE("redis scan cursor: slot ranges tile the token space", "[redis]") {
  for (uint64_t last : kLastTokens) {
    INFO("last token " << last);
    CHECK(SlotFirstToken(last, 0) == 0);
    CHECK(SlotLastToken(last, kClusterSlots - 1) == last);
    for (uint32_t slot = 1; slot < kClusterSlots; slot += 997) {
      CHECK(SlotFirstToken(last, slot) == SlotLastToken(last, slot - 1) + 1);
    }
  }
}

TEST_CASE("redis scan cursor: node-scoped DBSIZE shares add up to the total", "[redis]") {
  for (int64_t total : {0, 1, 2, 7, 1000, 123457}) {
    for (uint32_t nodes : {1u, 2u, 3u, 5u, 7u}) {
      int64_t sum = 0;
      for (uint32_t i = 0; i < nodes; ++i) {
        const uint32_t first = i * kClusterSlots / nodes;
        const uint32_t last = (i + 1) * kClusterSlots / nodes - 1;
        const int64_t share = SlotShare(total, first, last);
        CHECK(share >= 0);
        sum += share;
      }
      CHECK(sum == total);
    }
  }
}
