// Counters in the value envelope (format 3, the per-writer merge) and the writer's own totals
// (Storage::AddToCounter): design.md "Counters".
#include <catch2/catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "storage/counter_value.h"
#include "storage/storage.h"
#include "storage/value_envelope.h"
#include "testing/temp_dir.h"

namespace shardkv::storage {
namespace {

Envelope RoundTrip(const Envelope& e) {
  const std::string bytes = EncodeEnvelope(e);
  EnvelopeView view;
  const Status s = DecodeEnvelope(bytes, &view);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return view.ToEnvelope();
}

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
  CHECK(RoundTrip(e) == e);
  EnvelopeView view;
  REQUIRE(DecodeEnvelope(bytes, &view).ok());
  CHECK(view.counter_active);
  CHECK(view.LiveAt(1));

  // A counter over a value and an expiry round-trips too, value bytes after the entries.
  Envelope over = Envelope::Plain({100, 2}, false, "40", 9000);
  over.counter = {{kActorA, {100, 2}, 3, 0}, {kActorB, {100, 2}, 0, 10}};
  CHECK(RoundTrip(over) == over);
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
  CHECK(ReadValue(Envelope(del)) == "4");
  Envelope text = Envelope::Plain({10, 1}, false, "abc");
  text.counter = {{kActorA, {10, 1}, 4, 0}};
  CHECK_FALSE(CounterValue(text).has_value());
  CHECK(ReadValue(Envelope(text)) == "abc");
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
  CHECK(ReadValue(Envelope(after_set)) == "10");
  const Envelope incr = CounterWrite({kActorA, {50, 3}, 4, 0}, std::nullopt);
  CHECK(ReadValue(Merge(after_set, incr)) == "14");
  // An increment that counted over the old base and arrives after the SET is ordered before it.
  stored = after_set;
  CHECK(MergeInto(&stored, CounterWrite({kActorB, {}, 9, 0}, std::nullopt)) ==
        MergeOutcome::kDuplicate);
  CHECK(stored == after_set);
  // A DEL (tombstone) resets it too, and the counter restarts from 0 over it.
  const Envelope del = Envelope::Plain({60, 3}, true, "");
  const Envelope deleted = Merge(Merge(after_set, incr), del);
  CHECK_FALSE(deleted.LiveAt(1));
  CHECK(ReadValue(Merge(deleted, CounterWrite({kActorB, {60, 3}, 1, 0}, std::nullopt))) == "1");
  // An expired record's reset ("0" at a version every coordinator computes alike) keeps the
  // increments of every coordinator that saw the same expired record.
  const Version reset{99, 0};
  const Envelope r1 = CounterWrite({kActorA, reset, 1, 0}, reset);
  const Envelope r2 = CounterWrite({kActorB, reset, 1, 0}, reset);
  CHECK(ReadValue(Merge(r1, r2)) == "2");
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
    if (pick(2) == 0) continue;
    const Version base =
        pick(2) == 0 ? e.version() : Version{pick(4), static_cast<uint32_t>(pick(2))};
    e.counter.push_back({actor, base, pick(4), pick(3)});
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
    REQUIRE(Merge(a, a) == a);
    REQUIRE(Merge(a, b) == Merge(b, a));
    REQUIRE(Merge(Merge(a, b), c) == Merge(a, Merge(b, c)));
    const Envelope ab = Merge(a, b);
    REQUIRE(Merge(ab, a) == ab);
    REQUIRE(Merge(ab, b) == ab);
    REQUIRE(RoundTrip(ab) == ab);
    REQUIRE(ValidateEnvelopeShape(ab).ok());
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
    auto e = (*s)->AddToCounter({7, "k"}, {}, 5);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {}, 5, 0});
    e = (*s)->AddToCounter({7, "k"}, {}, -2);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {}, 5, 2});
    // A read that saw a reset (newer base): the totals start again from zero there.
    e = (*s)->AddToCounter({7, "k"}, {30, 1}, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 1, 0});
    // A read behind this writer's own last increment (older base): it keeps counting there.
    e = (*s)->AddToCounter({7, "k"}, {}, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 2, 0});
    // Another key has totals of its own.
    e = (*s)->AddToCounter({7, "other"}, {}, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {}, 1, 0});
    // Totals never wrap.
    e = (*s)->AddToCounter({8, "big"}, {}, INT64_MAX);
    REQUIRE(e.ok());
    e = (*s)->AddToCounter({8, "big"}, {}, INT64_MAX);
    REQUIRE(e.ok());
    e = (*s)->AddToCounter({8, "big"}, {}, 2);
    CHECK(e.status().code() == Status::Code::kInvalidArgument);
    REQUIRE((*s)->Close().ok());
  }
  {
    auto s = Storage::Open(dir.Sub("db"), options);
    REQUIRE(s.ok());
    CHECK((*s)->CounterActor() == actor);  // the same writer after a restart
    auto e = (*s)->AddToCounter({7, "k"}, {30, 1}, 1);
    REQUIRE(e.ok());
    CHECK(*e == CounterEntry{actor, {30, 1}, 3, 0});
    // The totals follow the key, not its token (which a map's placement parameters decide).
    e = (*s)->AddToCounter({99, "k"}, {30, 1}, 1);
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
  auto e = (*s)->AddToCounter({1, "k"}, {}, 7);
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
  e = (*crashed)->AddToCounter({1, "k"}, {}, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{after, {}, 1, 0});
  // A clean close and reopen keeps the writer.
  REQUIRE((*crashed)->Close().ok());
  crashed = Storage::Open(dir.Sub("crashed"), options);
  REQUIRE(crashed.ok());
  CHECK((*crashed)->CounterActor() == after);
  e = (*crashed)->AddToCounter({1, "k"}, {}, 1);
  REQUIRE(e.ok());
  CHECK(*e == CounterEntry{after, {}, 2, 0});
}

}  // namespace
}  // namespace shardkv::storage
