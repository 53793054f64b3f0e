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

TEST_CASE("RepairHorizons: the horizon of the range holding a token, 0 outside", "[tombstone]") {
  RepairHorizons h;
  CHECK(h.Of(5) == 0);
  h.Set({{{100, 199}, 7000}, {{0, 99}, 5000}, {{150, 300}, 9}, {{UINT64_MAX, UINT64_MAX}, 1}});
  CHECK(h.Of(0) == 5000);
  CHECK(h.Of(99) == 5000);
  CHECK(h.Of(100) == 7000);
  CHECK(h.Of(199) == 7000);
  CHECK(h.Of(200) == 0);  // the range overlapping [100, 199] was dropped
  CHECK(h.Of(UINT64_MAX) == 1);
  h.Set({});
  CHECK(h.Of(0) == 0);
}

// The GC rule (design.md "Tombstones and GC"): past the grace is not enough; the tombstone must
// also be older than the last repair that compared its range with every replica.
TEST_CASE("TombstoneGc with repair horizons: past the grace and before the last full repair",
          "[tombstone]") {
  constexpr uint64_t kGraceMs = 1000;
  constexpr uint64_t kWrittenMs = 50000;
  auto horizons = std::make_shared<RepairHorizons>();
  TombstoneGc gc(kGraceMs, nullptr, std::make_shared<ProtectedRanges>(), horizons);
  const std::string tomb =
      EncodeEnvelope(Envelope{common::HlcClock::Make(kWrittenMs, 3), 1, true, ""});
  const std::string key = EncodeDataKey(100, "k");
  const uint64_t later = kWrittenMs + 100 * kGraceMs;  // far past the grace

  // No repair history for the range (new here, or never repaired): kept.
  CHECK_FALSE(gc.ShouldDrop(key, tomb, later));
  // Older than the grace but newer than the last complete repair: kept.
  horizons->Set({{{0, 1000}, kWrittenMs - 1}});
  CHECK_FALSE(gc.ShouldDrop(key, tomb, later));
  horizons->Set({{{0, 1000}, kWrittenMs}});  // repaired from the very ms it was written: kept
  CHECK_FALSE(gc.ShouldDrop(key, tomb, later));
  // Older than both: purged.
  horizons->Set({{{0, 1000}, kWrittenMs + 1}});
  CHECK(gc.ShouldDrop(key, tomb, later));
  // Repaired since, but within the grace: kept (the grace still holds, whichever is later).
  CHECK_FALSE(gc.ShouldDrop(key, tomb, kWrittenMs + kGraceMs));
  // Another range's repair says nothing of this one.
  horizons->Set({{{0, 99}, later}, {{101, 1000}, later}});
  CHECK_FALSE(gc.ShouldDrop(key, tomb, later));
  // One replica (RF=1): the horizon is unbounded, the grace alone decides.
  horizons->Set({{{0, UINT64_MAX}, UINT64_MAX}});
  CHECK(gc.ShouldDrop(key, tomb, later));

  // Expired values are held back the same way: a replica may still hold an older live version.
  Envelope expiring{common::HlcClock::Make(kWrittenMs, 0), 1, false, "v"};
  expiring.SetExpiry(expiring.version(), kWrittenMs + 10);
  const std::string expired = EncodeEnvelope(expiring);
  horizons->Set({{{0, 1000}, kWrittenMs - 1}});
  CHECK_FALSE(gc.ShouldDrop(key, expired, later));
  horizons->Set({{{0, 1000}, kWrittenMs + 1}});
  CHECK(gc.ShouldDrop(key, expired, later));
}

TEST_CASE("TombstoneGc counts tombstones kept for want of a repair", "[tombstone]") {
  auto horizons = std::make_shared<RepairHorizons>();
  uint64_t now = 10000;
  TombstoneGc gc(
      10, [&now] { return now; }, std::make_shared<ProtectedRanges>(), horizons);
  const std::string tomb = EncodeEnvelope(Envelope{common::HlcClock::Make(100, 0), 1, true, ""});
  horizons->Set({{{8, 8}, 101}});
  CHECK_FALSE(gc.ShouldDropNow(EncodeDataKey(7, "a"), tomb));
  CHECK(gc.ShouldDropNow(EncodeDataKey(8, "a"), tomb));
  CHECK(gc.dropped() == 1);
  CHECK(gc.kept_unrepaired() == 1);
  CHECK(gc.kept_protected() == 0);
}

}  // namespace
}  // namespace shardkv::storage
