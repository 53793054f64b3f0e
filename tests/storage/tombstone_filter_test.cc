#include "storage/tombstone_filter.h"

#include <catch2/catch.hpp>

#include "common/hlc.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {
namespace {

TEST_CASE("ProtectedRanges registers overlapping ranges by id", "[tombstone]") {
  ProtectedRanges ranges;
  CHECK_FALSE(ranges.Contains(0));
  const uint64_t low = ranges.Add({0, 10});
  const uint64_t top = ranges.Add({UINT64_MAX, UINT64_MAX});
  const uint64_t overlap = ranges.Add({5, 20});
  CHECK(low != top);
  CHECK(ranges.Contains(0));
  CHECK(ranges.Contains(10));
  CHECK(ranges.Contains(20));
  CHECK_FALSE(ranges.Contains(21));
  CHECK(ranges.Contains(UINT64_MAX));
  CHECK_FALSE(ranges.Contains(UINT64_MAX - 1));
  CHECK(ranges.List().size() == 3);

  REQUIRE(ranges.Remove(low).ok());
  CHECK_FALSE(ranges.Contains(0));
  CHECK(ranges.Contains(7));  // still covered by `overlap`
  CHECK(ranges.Remove(low).IsNotFound());
  REQUIRE(ranges.Remove(overlap).ok());
  REQUIRE(ranges.Remove(top).ok());
  CHECK(ranges.List().empty());
}

TEST_CASE("TombstoneGc drops only expired, unprotected tombstones", "[tombstone]") {
  constexpr uint64_t kGraceMs = 1000;
  constexpr uint64_t kWrittenMs = 50000;
  auto ranges = std::make_shared<ProtectedRanges>();
  TombstoneGc gc(kGraceMs, nullptr, ranges);
  const uint64_t ts = common::HlcClock::Make(kWrittenMs, 3);
  const std::string tomb = EncodeEnvelope(Envelope{ts, 1, true, ""});
  const std::string live = EncodeEnvelope(Envelope{ts, 1, false, "v"});
  const std::string key = EncodeDataKey(100, "k");

  CHECK_FALSE(gc.ShouldDrop(key, tomb, kWrittenMs + kGraceMs));  // exactly the grace: keep
  CHECK(gc.ShouldDrop(key, tomb, kWrittenMs + kGraceMs + 1));
  CHECK_FALSE(gc.ShouldDrop(key, live, kWrittenMs + 100 * kGraceMs));  // values never expire
  CHECK_FALSE(gc.ShouldDrop(key, tomb, kWrittenMs - 5));               // written "in the future"

  const uint64_t id = ranges->Add({90, 100});
  CHECK_FALSE(gc.ShouldDrop(key, tomb, kWrittenMs + 10 * kGraceMs));
  REQUIRE(ranges->Remove(id).ok());
  CHECK(gc.ShouldDrop(key, tomb, kWrittenMs + 10 * kGraceMs));

  // Whatever does not decode is kept.
  std::string unknown_format = tomb;
  unknown_format[0] = 9;
  CHECK_FALSE(gc.ShouldDrop(key, unknown_format, kWrittenMs + 10 * kGraceMs));
  CHECK_FALSE(gc.ShouldDrop("short", tomb, kWrittenMs + 10 * kGraceMs));
}

TEST_CASE("TombstoneGc counts drops and protected keeps", "[tombstone]") {
  auto ranges = std::make_shared<ProtectedRanges>();
  uint64_t now = 10000;
  TombstoneGc gc(
      10, [&now] { return now; }, ranges);
  const std::string tomb = EncodeEnvelope(Envelope{common::HlcClock::Make(100, 0), 1, true, ""});
  (void)ranges->Add({7, 7});
  CHECK_FALSE(gc.ShouldDropNow(EncodeDataKey(7, "a"), tomb));
  CHECK(gc.ShouldDropNow(EncodeDataKey(8, "a"), tomb));
  CHECK(gc.dropped() == 1);
  CHECK(gc.kept_protected() == 1);
}

}  // namespace
}  // namespace shardkv::storage
