// Sets in the value envelope (design.md "Sets"): format 5's bytes, the add-wins observed-remove
// merge (per member and node, each time by maximum), resets by a newer SET or DEL, which
// collection a record holds, and the merge's join laws.
#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "merge_laws.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {
namespace {

// What an SADD or SREM sends: the entries alone, both registers "no opinion".
Envelope Members(std::vector<SetMember> members) {
  Envelope e;
  e.value_absent = true;
  e.SetExpiry(Version{}, 0);
  e.set = std::move(members);
  return e;
}

// An SREM of every live entry of `name` in `read`, at HLC time `at`.
Envelope RemoveSeen(const Envelope& read, const std::string& name, uint64_t at) {
  std::vector<SetMember> out;
  for (const SetMember& m : read.set) {
    if (m.name == name && m.live()) out.push_back({m.name, m.actor, m.add, m.add, at});
  }
  return Members(std::move(out));
}

std::vector<std::string> LiveNames(const Envelope& e) {
  std::vector<std::string> out;
  for (const SetMember& m : e.set) {
    if (m.live() && (out.empty() || out.back() != m.name)) out.push_back(m.name);
  }
  return out;
}

TEST_CASE("set: format 5 golden bytes, round trip and malformed sections", "[set]") {
  const Envelope e = Members({{"m", 2, 5, 0, 0}});
  const std::string bytes = EncodeEnvelope(e);
  std::string want;
  want += '\x05';                // format 5
  want += '\x02';                // flags: value absent
  want += std::string(8, '\0');  // value version (0, 0)
  want += '\0';
  want += std::string(8, '\0');  // expiry version (0, 0)
  want += '\0';
  want += std::string(8, '\0');                  // expires_at 0
  want += '\0';                                  // no counter entries
  want += '\0';                                  // no hash fields
  want += '\x01';                                // one set entry
  want += '\x01';                                // member length
  want += 'm';                                   // member
  want += '\x02';                                // actor: node 2
  want += std::string("\x05\0\0\0\0\0\0\0", 8);  // add 5
  want += std::string(8, '\0');                  // removed 0
  want += std::string(8, '\0');                  // removed_at 0
  CHECK(bytes == want);
  CHECK(merge_laws::RoundTrip(e) == e);
  EnvelopeView view;
  REQUIRE(DecodeEnvelope(bytes, &view).ok());
  CHECK(view.set_live);
  CHECK(view.LiveAt(1));
  CHECK(view.set_newest == Version{5, 2});
  CHECK(e.set_live());
  CHECK(e.collection() == Collection::kSet);

  // With a counter, a hash field, an expiry and a removed entry: still round-trips.
  Envelope mixed = Envelope::Plain({3, 2}, true, "");
  mixed.SetExpiry({4, 2}, 9000);
  mixed.hash = {{"f", {6, 1}, true, ""}};
  mixed.set = {{"a", 1, 7, 7, 9}, {"a", 3, 8, 0, 0}, {"b", 1, 5, 0, 0}};
  CHECK(merge_laws::RoundTrip(mixed) == mixed);
  CHECK(ValidateEnvelopeShape(mixed).ok());
  REQUIRE(DecodeEnvelope(EncodeEnvelope(mixed), &view).ok());
  CHECK(view.set_newest == Version{9, 0});  // the remove's time ages the record

  // Cut short, out of (member, node) order, repeated, an add of 0, a remove above the add, or a
  // remove time without a removed add: corruption (decoding) or refused (writing).
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK_FALSE(DecodeEnvelope(std::string_view(bytes).substr(0, cut), &view).ok());
  }
  std::string no_add = bytes;
  no_add[no_add.size() - 24] = '\0';
  CHECK(DecodeEnvelope(no_add, &view).code() == Status::Code::kCorruption);
  std::string at_only = bytes;
  at_only[at_only.size() - 8] = '\x01';
  CHECK(DecodeEnvelope(at_only, &view).code() == Status::Code::kCorruption);
  const auto refused = [](std::vector<SetMember> m) {
    return ValidateEnvelopeShape(Members(std::move(m))).code() == Status::Code::kInvalidArgument;
  };
  CHECK(refused({{"b", 1, 5, 0, 0}, {"a", 1, 5, 0, 0}}));
  CHECK(refused({{"a", 2, 5, 0, 0}, {"a", 1, 5, 0, 0}}));
  CHECK(refused({{"a", 1, 5, 0, 0}, {"a", 1, 6, 0, 0}}));
  CHECK(refused({{"a", 1, 0, 0, 0}}));
  CHECK(refused({{"a", 1, 5, 6, 7}}));
  CHECK(refused({{"a", 1, 5, 5, 0}}));
  Envelope older = Envelope::Plain({9, 1}, false, "s");
  older.set = {{"a", 1, 5, 0, 0}};
  CHECK(ValidateEnvelopeShape(older).code() == Status::Code::kInvalidArgument);
  // A format this build does not know yet is NotSupported, not guessed at.
  std::string future = bytes;
  future[0] = '\x06';
  CHECK(DecodeEnvelope(future, &view).code() == Status::Code::kNotSupported);
}

TEST_CASE(
    "set: adds through different nodes all survive and an add wins over a remove that did "
    "not see it (SET and DEL reset)",
    "[set]") {
  // Two coordinators add different members at once: both survive.
  const Envelope a = Members({{"x", 1, 10, 0, 0}});
  const Envelope b = Members({{"y", 2, 11, 0, 0}});
  const Envelope both = Merge(a, b);
  CHECK(LiveNames(both) == std::vector<std::string>{"x", "y"});
  // One member added through two nodes: two entries, one member.
  const Envelope x2 = Merge(both, Members({{"x", 2, 12, 0, 0}}));
  CHECK(LiveNames(x2) == std::vector<std::string>{"x", "y"});
  CHECK(x2.set.size() == 3);
  // An SREM that read both of x's adds removes x...
  const Envelope rem = RemoveSeen(x2, "x", 20);
  Envelope stored = Merge(x2, rem);
  CHECK(LiveNames(stored) == std::vector<std::string>{"y"});
  // ... and an add it did not see, concurrent with it, survives it (add wins), in either order.
  const Envelope concurrent = Members({{"x", 3, 19, 0, 0}});
  CHECK(LiveNames(Merge(stored, concurrent)) == std::vector<std::string>{"x", "y"});
  CHECK(Merge(Merge(x2, concurrent), rem) == Merge(stored, concurrent));
  // A later add through a node whose add was removed brings the member back; a remove that saw
  // only the earlier add (it raced the later one) does not take it away.
  const Envelope readd = Members({{"x", 1, 30, 0, 0}});
  stored = Merge(stored, readd);
  CHECK(LiveNames(stored) == std::vector<std::string>{"x", "y"});
  CHECK(LiveNames(Merge(stored, rem)) == std::vector<std::string>{"x", "y"});
  // An older add arriving late does not bring a removed member back.
  const Envelope removed_y = Merge(stored, RemoveSeen(stored, "y", 31));
  CHECK(LiveNames(Merge(removed_y, b)) == std::vector<std::string>{"x"});
  CHECK(MergeInto(&stored, a) != MergeOutcome::kChanged);
  // Every member removed: the record reads as missing, but keeps its entries (and ages by the
  // newest remove) so that late adds stay removed.
  const Envelope empty = Merge(removed_y, RemoveSeen(removed_y, "x", 32));
  CHECK_FALSE(empty.LiveAt(1));
  CHECK(empty.collection() == Collection::kNone);
  CHECK(empty.newest_version() == Version{32, 0});
  CHECK_FALSE(Merge(empty, a).LiveAt(1));
  // A SET (newer value register) resets the set: the record is a string again.
  const Envelope set = Envelope::Plain({40, 1}, false, "plain");
  const Envelope reset = Merge(stored, set);
  CHECK(reset.set.empty());
  CHECK(reset.collection() == Collection::kNone);
  // An SADD after the SET makes it a set again; a DEL resets only the adds before it.
  const Envelope again = Merge(reset, Members({{"z", 2, 41, 0, 0}}));
  CHECK(again.collection() == Collection::kSet);
  const Envelope deleted = Merge(again, Envelope::Plain({42, 1}, true, ""));
  CHECK_FALSE(deleted.LiveAt(1));
  const Envelope racing = Merge(deleted, Members({{"w", 3, 43, 0, 0}}));
  CHECK(LiveNames(racing) == std::vector<std::string>{"w"});
}

TEST_CASE("set: a record with live hash fields and set members is what its newest write made it",
          "[set]") {
  Envelope e = Members({{"m", 1, 10, 0, 0}});
  e.hash = {{"f", {11, 2}, false, "v"}};
  CHECK(e.collection() == Collection::kHash);
  e.set.push_back({"n", 1, 12, 0, 0});
  CHECK(e.collection() == Collection::kSet);
  e.set.back().removed = 12;
  e.set.back().removed_at = 13;
  CHECK(e.collection() == Collection::kHash);  // only live writes count
  CHECK(Envelope::Plain({1, 1}, false, "s").collection() == Collection::kNone);
}

Envelope RandomSetRecord(std::mt19937_64& rng) {
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
      e = Members({});
      break;
  }
  const char* names[] = {"a", "b"};
  for (const char* name : names) {
    for (uint32_t actor = 1; actor <= 2; ++actor) {
      if (pick(2) == 0) continue;
      const uint64_t add = pick(6) + 1;
      const uint64_t removed = pick(3) == 0 ? pick(add) + 1 : 0;
      e.set.push_back({name, actor, add, removed, removed == 0 ? 0 : pick(8) + 1});
    }
  }
  if (pick(4) == 0) e.hash.push_back({"f", {pick(6), 1}, false, "v"});
  return Merge(e, e);  // canonical: entries older than the value register dropped
}

TEST_CASE("set: merge is commutative, associative and idempotent (fixed seed)", "[set]") {
  std::mt19937_64 rng(20261208);
  for (int i = 0; i < 20000; ++i) {
    const Envelope a = RandomSetRecord(rng);
    const Envelope b = RandomSetRecord(rng);
    const Envelope c = RandomSetRecord(rng);
    INFO("iteration " << i);
    const Envelope ab = merge_laws::RequireJoinLaws(a, b, c);
    // An entry in the merge never has an older add or remove than either side held, unless a
    // newer register reset it; a live add not covered by the other side's removes stays live.
    for (const SetMember& x : a.set) {
      const SetMember* y = nullptr;
      for (const SetMember& m : ab.set) {
        if (m.name == x.name && m.actor == x.actor) y = &m;
      }
      if (y == nullptr) {
        REQUIRE(x.add_version() < ab.version());
        continue;
      }
      REQUIRE(y->add >= x.add);
      REQUIRE((y->removed >= x.removed || SetRemoveReset(x, ab.version())));
      bool removed_elsewhere = false;
      for (const SetMember& m : b.set) {
        if (m.name == x.name && m.actor == x.actor && m.removed >= x.add) removed_elsewhere = true;
      }
      if (x.live() && !removed_elsewhere) REQUIRE(y->live());
    }
  }
}

}  // namespace
}  // namespace shardkv::storage
