// Counters in the value envelope (format 3, the per-writer merge) and the writer's own totals
// (Storage::AddToCounter): design.md "Counters".
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "merge_laws.h"
#include "storage/counter_value.h"
#include "storage/storage.h"
#include "storage/value_envelope.h"
#include "testing/temp_dir.h"

namespace shardkv::storage {
namespace {

constexpr uint64_t kActorA = (uint64_t{1} << 32) | 7;
constexpr uint64_t kActorB = (uint64_t{2} << 32) | 9;

TEST_CASE("counter: format 3 golden bytes, round trip and malformed sections", "[counter]") {
  const Envelope e = CounterWrite(CounterEntry{kActorA, {}, 5, 1}, std::nullopt);
  const std::string bytes = EncodeEnvelope(e);
  std::string want;
  want += '\x03';                // format 3
  want += '\x02';                // flags: value absent
  want += std::string(8, '\0');  // value version (0, 0)
  want += '\0';
  want += std::string(8, '\0');  // expiry version (0, 0): no opinion
  want += '\0';
  want += std::string(8, '\0');                    // expires_at 0
  want += '\x01';                                  // one entry
  want += std::string("\x07\0\0\0\x01\0\0\0", 8);  // actor, little-endian
  want += std::string(8, '\0');                    // base (0, 0)
  want += '\0';
  want += '\x05';  // inc
  want += '\x01';  // dec
  CHECK(bytes == want);
  CHECK(merge_laws::RoundTrip(e) == e);
  EnvelopeView view;
  REQUIRE(DecodeEnvelope(bytes, &view).ok());
  CHECK(view.counter_active);
  CHECK(view.LiveAt(1));

  // A counter over a value and an expiry round-trips too, value bytes after the entries.
  Envelope over = Envelope::Plain({100, 2}, false, "40", 9000);
  over.counter = {{kActorA, {100, 2}, 3, 0}, {kActorB, {100, 2}, 0, 10}};
  CHECK(merge_laws::RoundTrip(over) == over);
  CHECK(CounterValue(over) == 33);

  // Entries out of writer order, repeated, a zero count, or cut short are corruption.
  Envelope unordered = over;
  std::swap(unordered.counter[0], unordered.counter[1]);
  CHECK(ValidateEnvelopeShape(unordered).code() == Status::Code::kInvalidArgument);
  Envelope repeated = over;
  repeated.counter[1].actor = kActorA;
  CHECK(ValidateEnvelopeShape(repeated).code() == Status::Code::kInvalidArgument);
  Envelope stale = over;
  stale.counter[0].base = {99, 2};  // older than the value register it is stored with
  CHECK(ValidateEnvelopeShape(stale).code() == Status::Code::kInvalidArgument);
  // Hand-made bytes for the same faults (the encoder never writes them).
  std::string zero = want;
  zero[28] = '\0';
  CHECK(DecodeEnvelope(zero, &view).code() == Status::Code::kCorruption);
  CHECK(DecodeEnvelope(want.substr(0, want.size() - 1), &view).code() == Status::Code::kCorruption);
  std::string two = want.substr(0, 28) + '\x02' + want.substr(29) + want.substr(29);
  CHECK(DecodeEnvelope(two, &view).code() == Status::Code::kCorruption);  // same actor twice
}

TEST_CASE("counter: Redis's integer syntax and the value a counter reads as", "[counter]") {
  CHECK(ParseCounterInteger("0") == 0);
  CHECK(ParseCounterInteger("-17") == -17);
  CHECK(ParseCounterInteger("9223372036854775807") == INT64_MAX);
  CHECK(ParseCounterInteger("-9223372036854775808") == INT64_MIN);
  for (const char* bad : {"", "-", "+1", "01", "-0", " 1", "1 ", "1.5", "9223372036854775808",
                          "-9223372036854775809", "99999999999999999999", "abc"}) {
    INFO(bad);
    CHECK_FALSE(ParseCounterInteger(bad).has_value());
  }
  // A counter over a tombstone counts from 0; over a non-integer it has no integer value and
  // reads as the string.
  Envelope del = Envelope::Plain({10, 1}, true, "");
  del.counter = {{kActorA, {10, 1}, 4, 0}};
  CHECK(del.counter_active());
  CHECK(del.LiveAt(1));
  CHECK(ReadValue(Envelope(del), 1) == "4");
  Envelope text = Envelope::Plain({10, 1}, false, "abc");
  text.counter = {{kActorA, {10, 1}, 4, 0}};
  CHECK_FALSE(CounterValue(text).has_value());
  CHECK(ReadValue(Envelope(text), 1) == "abc");
  // Totals past INT64_MAX on both sides still give the difference.
  Envelope big = Envelope::Plain({10, 1}, false, "1");
  big.counter = {{kActorA, {10, 1}, UINT64_MAX, UINT64_MAX - 5}};
  CHECK(CounterValue(big) == 6);
  big.counter = {{kActorA, {10, 1}, UINT64_MAX, 0}};
  CHECK_FALSE(CounterValue(big).has_value());
}

TEST_CASE("counter: writers merge by maximum, and a newer SET or DEL resets the counter",
          "[counter]") {
  // Two coordinators increment at once: both count.
  const Envelope a = CounterWrite({kActorA, {}, 3, 0}, std::nullopt);
  const Envelope b = CounterWrite({kActorB, {}, 2, 1}, std::nullopt);
  Envelope both = Merge(a, b);
  CHECK(CounterValue(both) == 4);
  // A replayed or older copy of one writer's entry changes nothing.
  CHECK(Merge(both, CounterWrite({kActorA, {}, 1, 0}, std::nullopt)) == both);
  Envelope stored = both;
  CHECK(MergeInto(&stored, a) == MergeOutcome::kDuplicate);
  // A SET with a version resets it; increments over the SET's version count again.
  const Envelope set = Envelope::Plain({50, 3}, false, "10");
  const Envelope after_set = Merge(both, set);
  CHECK(after_set.counter.empty());
  CHECK(ReadValue(Envelope(after_set), 1) == "10");
  const Envelope incr = CounterWrite({kActorA, {50, 3}, 4, 0}, std::nullopt);
  CHECK(ReadValue(Merge(after_set, incr), 1) == "14");
  // An increment that counted over the old base and arrives after the SET is ordered before it.
  stored = after_set;
  CHECK(MergeInto(&stored, CounterWrite({kActorB, {}, 9, 0}, std::nullopt)) ==
        MergeOutcome::kDuplicate);
  CHECK(stored == after_set);
  // A DEL (tombstone) resets it too, and the counter restarts from 0 over it.
  const Envelope del = Envelope::Plain({60, 3}, true, "");
  const Envelope deleted = Merge(Merge(after_set, incr), del);
  CHECK_FALSE(deleted.LiveAt(1));
  CHECK(ReadValue(Merge(deleted, CounterWrite({kActorB, {60, 3}, 1, 0}, std::nullopt)), 1) == "1");
  // An expired record's death (a tombstone at a version every coordinator computes alike) keeps
  // the counts from nothing of every coordinator that saw the same expired record.
  const Version death{99, 0};
  const Envelope r1 = CounterWrite({kActorA, CountFromNothing(100), 1, 0}, death);
  const Envelope r2 = CounterWrite({kActorB, CountFromNothing(101), 1, 0}, death);
  CHECK(ReadValue(Merge(r1, r2), 1) == "2");
}

// The hole this rule closes: a DEL's tombstone collected on the replicas an increment's read
// asked, still held by another. The increment counts from nothing begun after the tombstone, so
// the tombstone coming back (read repair, anti-entropy) does not reset it; a DEL after it does.
TEST_CASE(
    "counter: a count from nothing outlives a collected tombstone or expired value that "
    "comes back",
    "[counter]") {
  const Envelope old_del = Envelope::Plain({100, 2}, true, "");
  const Envelope incr = CounterWrite({kActorA, CountFromNothing(200), 3, 0}, std::nullopt);
  Envelope back = Merge(incr, old_del);
  CHECK(back == Merge(old_del, incr));
  REQUIRE(back.counter.size() == 1);
  CHECK(back.LiveAt(1));
  CHECK(ReadValue(Envelope(back), 1) == "3");
  // The same increment over version (0, 0), as before this rule, is reset by it: the hole.
  CHECK(Merge(CounterWrite({kActorA, {}, 3, 0}, std::nullopt), old_del).counter.empty());
  // A DEL or SET after the count began resets it.
  CHECK_FALSE(Merge(back, Envelope::Plain({300, 1}, true, "")).LiveAt(1));
  CHECK(ReadValue(Merge(back, Envelope::Plain({300, 1}, false, "9")), 1) == "9");
  // A SET older than the start (arriving late) is a value: the count does not add to it, and
  // stays (a later tombstone still older than the start lets it count again).
  const Envelope late_set = Merge(back, Envelope::Plain({150, 1}, false, "5"));
  CHECK(ReadValue(Envelope(late_set), 1) == "5");
  CHECK(late_set.counter.size() == 1);
  CHECK(ReadValue(Merge(late_set, Envelope::Plain({180, 1}, true, "")), 1) == "3");

  // An expired value collected on some replicas and not on another: a count from nothing begun
  // after the expiry outlives the expired value merged back; one begun before it expires with it.
  const uint64_t ms = uint64_t{1} << 16;  // an HLC timestamp per millisecond
  const Envelope expiring = Envelope::Plain({1000 * ms, 2}, false, "7", 2000);
  const Envelope after = CounterWrite({kActorA, CountFromNothing(5000 * ms), 4, 0}, std::nullopt);
  const Envelope merged = Merge(expiring, after);
  CHECK(ReadValue(Envelope(merged), 1500) == "7");  // before the expiry: the value
  CHECK(merged.LiveAt(6000));
  CHECK(ReadValue(Envelope(merged), 6000) == "4");
  CHECK(merged.ExpiresAtMsAt(6000) == 0);
  CHECK(merged.ExpiresAtMsAt(1500) == 2000);
  const Envelope before = CounterWrite({kActorB, CountFromNothing(1500 * ms), 1, 0}, std::nullopt);
  CHECK_FALSE(Merge(expiring, before).LiveAt(6000));
  // The encoded record says the same (the tombstone GC keeps it past the grace).
  EnvelopeView view;
  const std::string encoded = EncodeEnvelope(merged);
  REQUIRE(DecodeEnvelope(encoded, &view).ok());
  CHECK(view.CounterOutlivesExpiry());
  CHECK(view.LiveAt(6000));
  CHECK(view.LiveAt(1000));
  const std::string encoded_before = EncodeEnvelope(Merge(expiring, before));
  REQUIRE(DecodeEnvelope(encoded_before, &view).ok());
  CHECK_FALSE(view.CounterOutlivesExpiry());
  // An increment that read the expired record writes its death: a later PERSIST or EXPIRE of
  // the expiry register cannot bring "7" back.
  const Version death = merged.ExpiryDeath();
  const Envelope seen = CounterWrite({kActorB, CountFromNothing(death.timestamp + 1), 1, 0}, death);
  Envelope persisted = Merge(Merge(merged, seen), Envelope::ExpiryOnly({7000 * ms, 1}, 0));
  CHECK(persisted.LiveAt(8000));
  CHECK(ReadValue(Envelope(persisted), 8000) == "5");
  CHECK(ValidateEnvelopeShape(persisted).ok());
}

TEST_CASE("counter: a writer goes on with its count from nothing only while a read shows it",
          "[counter]") {
  shardkv::testing::TempDir dir;
  StorageOptions options;
  options.node_id = 3;
  auto s = Storage::Open(dir.Sub("db"), options);
  REQUIRE(s.ok());
  const uint64_t actor = (*s)->CounterActor();
  const Envelope none;
  auto e = (*s)->AddToCounter({1, "k"}, CountFromNothing(100), none, 2);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(100), 2, 0});
  // The read shows it: the same count goes on (whatever start this read would begin).
  Envelope shown = CounterWrite(*e, std::nullopt);
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(400), shown, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(100), 3, 0});
  // A read showing only an earlier count from nothing of this writer (taken before the last
  // one's write landed): the last one goes on.
  const Envelope earlier = CounterWrite({actor, CountFromNothing(50), 1, 0}, std::nullopt);
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(450), earlier, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(100), 4, 0});
  // Another writer's count in the read is not this writer's.
  const Envelope others = CounterWrite({actor + 1, CountFromNothing(60), 1, 0}, std::nullopt);
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(460), others, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(460), 1, 0});
  shown = CounterWrite(*e, std::nullopt);
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(470), shown, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(460), 2, 0});
  // Gone from the read (a DEL reset it, and may since have been collected): a new count.
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(500), none, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(500), 1, 0});
  // A second increment in the same millisecond whose read predates the first's write: it must
  // not restart from zero under the same start (the two would merge into one increment).
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(500), none, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(501), 1, 0});
  // A read that shows a value: the count goes over its version.
  e = (*s)->AddToCounter({1, "k"}, {600, 1}, Envelope::Plain({600, 1}, false, "1"), 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, {600, 1}, 1, 0});
  // A read behind that (a dead register older than it): keep counting over the newer base.
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(700), Envelope::Plain({550, 1}, true, ""), 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, {600, 1}, 2, 0});
  // A read that saw a DEL after it: a new count from nothing.
  e = (*s)->AddToCounter({1, "k"}, CountFromNothing(800), Envelope::Plain({650, 1}, true, ""), 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{actor, CountFromNothing(800), 1, 0});
}

// Random canonical records over a small domain, with counters, so versions and bases collide.
Envelope RandomRecord(std::mt19937_64& rng) {
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  const Version v{pick(3) + 1, static_cast<uint32_t>(pick(2))};
  Envelope e;
  switch (pick(4)) {
    case 0:
      e = Envelope::Plain(v, false, pick(2) == 0 ? "5" : "x", pick(2) * 100);
      break;
    case 1:
      e = Envelope::Plain(v, true, "");
      break;
    case 2:
      e = Envelope::ExpiryOnly(v, pick(2) * 100);
      break;
    default:
      e = CounterWrite({kActorA, {}, 0, 0}, std::nullopt);
      e.counter.clear();
      break;
  }
  const uint64_t actors[] = {kActorA, kActorB, kActorB + 1};
  for (uint64_t actor : actors) {
    // Up to two entries per writer: over the register, over another version, or from nothing.
    for (uint64_t n = pick(3); n > 0; --n) {
      Version base;
      switch (pick(3)) {
        case 0:
          base = e.version();
          break;
        case 1:
          base = Version{pick(4), static_cast<uint32_t>(pick(2))};
          break;
        default:
          base = CountFromNothing(pick(5));
          break;
      }
      CounterEntry c{actor, base, pick(4), pick(3)};
      auto at = std::lower_bound(e.counter.begin(), e.counter.end(), c, CounterKeyLess);
      if (at == e.counter.end() || CounterKeyLess(c, *at)) e.counter.insert(at, c);
    }
  }
  return Merge(e, e);  // canonical: entries older than the value register dropped
}

TEST_CASE("counter: merge is commutative, associative and idempotent (fixed seed)", "[counter]") {
  std::mt19937_64 rng(20261207);
  for (int i = 0; i < 20000; ++i) {
    const Envelope a = RandomRecord(rng);
    const Envelope b = RandomRecord(rng);
    const Envelope c = RandomRecord(rng);
    INFO("iteration " << i);
    const Envelope ab = merge_laws::RequireJoinLaws(a, b, c);
    // A writer's entry in the merge is never below what either side held for the same base.
    for (const CounterEntry& x : a.counter) {
      for (const CounterEntry& y : ab.counter) {
        if (x.actor == y.actor && x.base == y.base) REQUIRE((y.inc >= x.inc && y.dec >= x.dec));
      }
    }
  }
}

TEST_CASE("counter: a writer's totals only grow, restart over a newer base, survive a reopen",
          "[counter]") {
  shardkv::testing::TempDir dir;
  StorageOptions options;
  options.node_id = 4;
  uint64_t actor = 0;
  {
    auto s = Storage::Open(dir.Sub("db"), options);
    REQUIRE(s.ok());
    actor = (*s)->CounterActor();
    CHECK((actor >> 32) == 4);
    CHECK((actor & 0xffffffff) != 0);
    const Envelope none;
    auto e = (*s)->AddToCounter({7, "k"}, {}, none, 5);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {}, 5, 0});
    e = (*s)->AddToCounter({7, "k"}, {}, none, -2);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {}, 5, 2});
    // A read that saw a reset (newer base): the totals start again from zero there.
    e = (*s)->AddToCounter({7, "k"}, {30, 1}, none, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 1, 0});
    // A read behind this writer's own last increment (older base): it keeps counting there.
    e = (*s)->AddToCounter({7, "k"}, {}, none, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 2, 0});
    // Another key has totals of its own.
    e = (*s)->AddToCounter({7, "other"}, {}, none, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {}, 1, 0});
    // Totals never wrap.
    e = (*s)->AddToCounter({8, "big"}, {}, none, INT64_MAX);
    REQUIRE(e.ok());
    e = (*s)->AddToCounter({8, "big"}, {}, none, INT64_MAX);
    REQUIRE(e.ok());
    e = (*s)->AddToCounter({8, "big"}, {}, none, 2);
    CHECK(e.status().code() == Status::Code::kInvalidArgument);
    REQUIRE((*s)->Close().ok());
  }
  {
    auto s = Storage::Open(dir.Sub("db"), options);
    REQUIRE(s.ok());
    CHECK((*s)->CounterActor() == actor);  // the same writer after a restart
    const Envelope none;
    auto e = (*s)->AddToCounter({7, "k"}, {30, 1}, none, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 3, 0});
    // The totals follow the key, not its token (which a map's placement parameters decide).
    e = (*s)->AddToCounter({99, "k"}, {30, 1}, none, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 4, 0});
  }
  // A database made from nothing (a rebuilt node) is a new writer.
  auto fresh = Storage::Open(dir.Sub("db2"), options);
  REQUIRE(fresh.ok());
  CHECK((*fresh)->CounterActor() != actor);
}

TEST_CASE("counter: after an unclean stop a node counts on as a new writer, from zero",
          "[counter]") {
  shardkv::testing::TempDir dir;
  StorageOptions options;
  options.node_id = 2;
  auto s = Storage::Open(dir.Sub("db"), options);
  REQUIRE(s.ok());
  const uint64_t actor = (*s)->CounterActor();
  const Envelope none;
  auto e = (*s)->AddToCounter({1, "k"}, {}, none, 7);
  REQUIRE(e.ok());
  // A copy of the open database is what a crash leaves: no clean-close mark. Its last unsynced
  // totals could have been lost, so it must not count on from them as the same writer.
  std::filesystem::copy(dir.Sub("db"), dir.Sub("crashed"),
                        std::filesystem::copy_options::recursive);
  auto crashed = Storage::Open(dir.Sub("crashed"), options);
  REQUIRE(crashed.ok());
  const uint64_t after = (*crashed)->CounterActor();
  CHECK(after != actor);
  CHECK((after >> 32) == 2);
  e = (*crashed)->AddToCounter({1, "k"}, {}, none, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{after, {}, 1, 0});
  // A clean close and reopen keeps the writer.
  REQUIRE((*crashed)->Close().ok());
  crashed = Storage::Open(dir.Sub("crashed"), options);
  REQUIRE(crashed.ok());
  CHECK((*crashed)->CounterActor() == after);
  e = (*crashed)->AddToCounter({1, "k"}, {}, none, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{after, {}, 2, 0});
}

}  // namespace
}  // namespace shardkv::storage
