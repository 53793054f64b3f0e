// Hashes in the value envelope (design.md "Hashes"): format 4's bytes, per-field last-write-wins
// merge with field tombstones, resets by a newer SET or DEL, and the merge's join laws.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "merge_laws.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {
namespace {

// What an HSET or HDEL sends: the fields alone, both registers "no opinion".
Envelope Fields(std::vector<HashField> fields) {
  Envelope e;
  e.value_absent = true;
  e.SetExpiry(Version{}, 0);
  e.hash = std::move(fields);
  return e;
}

TEST_CASE("hash: format 4 golden bytes, round trip and malformed sections", "[hash]") {
  const Envelope e = Fields({{"f", {5, 1}, false, "v"}});
  const std::string bytes = EncodeEnvelope(e);
  std::string want;
  want += '\x04';                // format 4
  want += '\x02';                // flags: value absent
  want += std::string(8, '\0');  // value version (0, 0)
  want += '\0';
  want += std::string(8, '\0');  // expiry version (0, 0)
  want += '\0';
  want += std::string(8, '\0');                  // expires_at 0
  want += '\0';                                  // no counter entries
  want += '\x01';                                // one field
  want += '\x01';                                // name length
  want += 'f';                                   // name
  want += std::string("\x05\0\0\0\0\0\0\0", 8);  // field ts 5
  want += '\x01';                                // field node 1
  want += '\0';                                  // flags: live
  want += '\x01';                                // value length
  want += 'v';                                   // value
  CHECK(bytes == want);
  CHECK(merge_laws::RoundTrip(e) == e);
  EnvelopeView view;
  REQUIRE(DecodeEnvelope(bytes, &view).ok());
  CHECK(view.hash_live);
  CHECK(view.LiveAt(1));
  CHECK(view.hash_newest == Version{5, 1});
  CHECK(e.LiveAt(1));
  CHECK(e.hash_live());

  // With a counter and an expiry and a deleted field: still round-trips.
  Envelope mixed = Envelope::Plain({3, 2}, true, "");
  mixed.SetExpiry({4, 2}, 9000);
  mixed.hash = {{"a", {6, 1}, true, ""}, {"b", {7, 3}, false, std::string(300, 'x')}};
  CHECK(merge_laws::RoundTrip(mixed) == mixed);
  CHECK(ValidateEnvelopeShape(mixed).ok());

  // Fields out of name order, repeated, cut short, with reserved flags, or a deleted field with
  // bytes are corruption (decoding) or refused (writing).
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK_FALSE(DecodeEnvelope(std::string_view(bytes).substr(0, cut), &view).ok());
  }
  std::string flagged = bytes;
  flagged[flagged.size() - 3] = '\x02';
  CHECK(DecodeEnvelope(flagged, &view).code() == Status::Code::kCorruption);
  Envelope unordered = Fields({{"b", {5, 1}, false, "v"}, {"a", {5, 1}, false, "v"}});
  CHECK(ValidateEnvelopeShape(unordered).code() == Status::Code::kInvalidArgument);
  Envelope repeated = Fields({{"a", {5, 1}, false, "v"}, {"a", {6, 1}, false, "w"}});
  CHECK(ValidateEnvelopeShape(repeated).code() == Status::Code::kInvalidArgument);
  Envelope deleted_bytes = Fields({{"a", {5, 1}, true, "v"}});
  CHECK(ValidateEnvelopeShape(deleted_bytes).code() == Status::Code::kInvalidArgument);
  Envelope older = Envelope::Plain({9, 1}, false, "s");
  older.hash = {{"a", {5, 1}, false, "v"}};
  CHECK(ValidateEnvelopeShape(older).code() == Status::Code::kInvalidArgument);
}

TEST_CASE("hash: fields merge by last write, HDEL wins over an older HSET, SET and DEL reset",
          "[hash]") {
  // Two coordinators set different fields at once: both survive.
  const Envelope a = Fields({{"name", {10, 1}, false, "ann"}});
  const Envelope b = Fields({{"age", {11, 2}, false, "42"}});
  const Envelope both = Merge(a, b);
  REQUIRE(both.hash.size() == 2);
  CHECK(both.hash[0].name == "age");
  CHECK(both.hash[1].name == "name");
  // One field written twice: the newer write wins, whichever arrives first.
  const Envelope newer = Fields({{"name", {12, 3}, false, "bob"}});
  CHECK(Merge(both, newer) == Merge(newer, both));
  CHECK(Merge(both, newer).hash[1].value == "bob");
  // An HDEL (field tombstone) newer than an HSET hides it, and an older HSET arriving later
  // does not bring it back.
  const Envelope del = Fields({{"name", {13, 1}, true, ""}});
  Envelope stored = Merge(Merge(both, newer), del);
  CHECK(stored.hash[1].deleted);
  CHECK(stored.hash_live());  // "age" is still there
  CHECK(Merge(stored, newer) == stored);
  CHECK(MergeInto(&stored, a) != MergeOutcome::kChanged);
  // A SET (newer value register) resets the hash: the record is a string again.
  const Envelope set = Envelope::Plain({20, 1}, false, "plain");
  const Envelope reset = Merge(stored, set);
  CHECK(reset.hash.empty());
  CHECK_FALSE(reset.hash_live());
  // An HSET after the SET makes it a hash again (the newest write decides the type).
  const Envelope again = Merge(reset, Fields({{"x", {21, 2}, false, "1"}}));
  CHECK(again.hash_live());
  CHECK(again.has_value());  // the shadowed string is still the register
  // A DEL resets it too, and only the fields written before it.
  const Envelope deleted = Merge(again, Envelope::Plain({22, 1}, true, ""));
  CHECK_FALSE(deleted.LiveAt(1));
  const Envelope racing = Merge(deleted, Fields({{"y", {23, 3}, false, "2"}}));
  CHECK(racing.LiveAt(1));
  CHECK(racing.hash.size() == 1);
  // Only deleted fields: not live.
  CHECK_FALSE(Fields({{"a", {5, 1}, true, ""}}).LiveAt(1));
  // The newest version covers the fields (clock updates, tombstone GC age).
  CHECK(racing.newest_version() == Version{23, 3});
}

Envelope RandomHashRecord(std::mt19937_64& rng) {
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  const Version v{pick(4) + 1, static_cast<uint32_t>(pick(2))};
  Envelope e;
  switch (pick(3)) {
    case 0:
      e = Envelope::Plain(v, false, "s", pick(2) * 100);
      break;
    case 1:
      e = Envelope::Plain(v, true, "");
      break;
    default:
      e = Fields({});
      break;
  }
  const char* names[] = {"a", "b", "c"};
  for (const char* name : names) {
    if (pick(2) == 0) continue;
    const bool deleted = pick(3) == 0;
    e.hash.push_back({name,
                      {pick(6), static_cast<uint32_t>(pick(2))},
                      deleted,
                      deleted ? "" : std::string(1, static_cast<char>('x' + pick(2)))});
  }
  return Merge(e, e);  // canonical: fields older than the value register dropped
}

TEST_CASE("hash: merge is commutative, associative and idempotent (fixed seed)", "[hash]") {
  std::mt19937_64 rng(20261207);
  for (int i = 0; i < 20000; ++i) {
    const Envelope a = RandomHashRecord(rng);
    const Envelope b = RandomHashRecord(rng);
    const Envelope c = RandomHashRecord(rng);
    INFO("iteration " << i);
    const Envelope ab = merge_laws::RequireJoinLaws(a, b, c);
    // A field in the merge is never older than what either side held, unless a newer register
    // reset it.
    for (const HashField& x : a.hash) {
      bool found = false;
      for (const HashField& y : ab.hash) {
        if (y.name == x.name) {
          found = true;
          REQUIRE(!(y.version < x.version));
        }
      }
      if (!found) REQUIRE(x.version < ab.version());
    }
  }
}

}  // namespace
}  // namespace shardkv::storage
