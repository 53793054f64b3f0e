// Envelope format 2 and the two-register merge (value_envelope.h).
#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "merge_laws.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {
namespace {

TEST_CASE("format 2 golden bytes and format 1 for plain writes", "[envelope][ttl]") {
  // A plain write, with or without an explicit but equal expiry register, stays format 1.
  Envelope plain{7, 2, false, "v"};
  CHECK(EncodeEnvelope(plain)[0] == kEnvelopeFormatV1);
  Envelope same = plain;
  same.SetExpiry(plain.version(), 0);
  CHECK(EncodeEnvelope(same) == EncodeEnvelope(plain));
  CHECK(same == plain);

  const Envelope ttl = Envelope::Plain({0x0102030405060708ULL, 300}, false, "v", 0x10);
  // format 2, flags 0, value ts, varint(300), expiry ts, varint(300), expires_at, value.
  CHECK(EncodeEnvelope(ttl) == std::string("\x02\x00"
                                           "\x08\x07\x06\x05\x04\x03\x02\x01\xAC\x02"
                                           "\x08\x07\x06\x05\x04\x03\x02\x01\xAC\x02"
                                           "\x10\x00\x00\x00\x00\x00\x00\x00v",
                                           31));
  const Envelope expiry_only = Envelope::ExpiryOnly({5, 1}, 9);
  CHECK(EncodeEnvelope(expiry_only) == std::string("\x02\x02"
                                                   "\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                                                   "\x05\x00\x00\x00\x00\x00\x00\x00\x01"
                                                   "\x09\x00\x00\x00\x00\x00\x00\x00",
                                                   28));
}

TEST_CASE("format 2 envelopes round-trip", "[envelope][ttl]") {
  std::vector<Envelope> cases = {
      Envelope::Plain({1, 1}, false, "a", 1000),
      Envelope::Plain({1, 1}, true, "", 0),
      Envelope::ValueOnly({3, 128}, std::string("x\0y", 3)),
      Envelope::ExpiryOnly({4, UINT32_MAX}, 0),
      Envelope::ExpiryOnly({UINT64_MAX, 0}, UINT64_MAX),
  };
  Envelope mixed{9, 1, false, "m"};
  mixed.SetExpiry({5, 2}, 77);
  cases.push_back(mixed);
  for (const Envelope& e : cases) CHECK(merge_laws::RoundTrip(e) == e);
}

TEST_CASE("malformed format 2 envelopes are refused", "[envelope][ttl]") {
  EnvelopeView view;
  const std::string good = EncodeEnvelope(Envelope::Plain({1, 1}, false, "x", 5));
  for (size_t n = 0; n + 1 < good.size(); ++n) {
    CHECK_FALSE(DecodeEnvelope(good.substr(0, n), &view).ok());
  }
  std::string both = good;
  both[1] = kEnvelopeFlagTombstone | kEnvelopeFlagValueAbsent;
  CHECK(DecodeEnvelope(both, &view).code() == Status::Code::kCorruption);
  std::string reserved = good;
  reserved[1] = 0x04;
  CHECK(DecodeEnvelope(reserved, &view).code() == Status::Code::kCorruption);
  std::string absent_with_bytes = EncodeEnvelope(Envelope::ExpiryOnly({1, 1}, 5)) + "x";
  CHECK(DecodeEnvelope(absent_with_bytes, &view).code() == Status::Code::kCorruption);
  // Format 1 never had the value-absent flag.
  std::string v1 = EncodeEnvelope(Envelope{1, 1, false, ""});
  v1[1] = kEnvelopeFlagValueAbsent;
  CHECK(DecodeEnvelope(v1, &view).code() == Status::Code::kCorruption);

  Envelope bad = Envelope::ExpiryOnly({1, 1}, 5);
  bad.timestamp = 3;
  CHECK(ValidateEnvelopeShape(bad).code() == Status::Code::kInvalidArgument);
  bad = Envelope::ExpiryOnly({1, 1}, 5);
  bad.tombstone = true;
  CHECK(ValidateEnvelopeShape(bad).code() == Status::Code::kInvalidArgument);
  CHECK(ValidateEnvelopeShape(Envelope::ValueOnly({1, 1}, "v")).ok());
}

TEST_CASE("an EXPIRE never overwrites a newer value, KEEPTTL keeps the expiry", "[envelope][ttl]") {
  const Envelope set_v1 = Envelope::Plain({10, 1}, false, "v1");
  const Envelope expire = Envelope::ExpiryOnly({20, 2}, 5000);
  const Envelope set_v2 = Envelope::Plain({30, 1}, false, "v2");

  // EXPIRE after SET v1: the value survives with the TTL.
  Envelope m = Merge(set_v1, expire);
  CHECK(m.value == "v1");
  CHECK(m.expires_at_ms() == 5000);
  // A newer SET clears the TTL, in either arrival order.
  CHECK(Merge(m, set_v2) == set_v2);
  CHECK(Merge(set_v2, m) == set_v2);
  // The EXPIRE arriving after the newer SET changes nothing.
  Envelope stored = set_v2;
  CHECK(MergeInto(&stored, expire) == MergeOutcome::kSuperseded);
  CHECK(stored == set_v2);
  CHECK(MergeInto(&stored, set_v2) == MergeOutcome::kDuplicate);
  // Replaying a partial write whose registers are all stored is a duplicate, not superseded.
  Envelope with_ttl = m;
  CHECK(MergeInto(&with_ttl, expire) == MergeOutcome::kDuplicate);
  // The SET's own "no expiry" lost to the newer EXPIRE: superseded.
  CHECK(MergeInto(&with_ttl, set_v1) == MergeOutcome::kSuperseded);

  // An expiry-only record on a replica that missed the SET: the SET merges under it.
  Envelope replica = expire;
  CHECK_FALSE(replica.LiveAt(0));
  CHECK(MergeInto(&replica, set_v1) == MergeOutcome::kChanged);
  CHECK(replica == m);

  // KEEPTTL: the value changes, the TTL stays.
  const Envelope keep = Envelope::ValueOnly({40, 3}, "v3");
  const Envelope kept = Merge(m, keep);
  CHECK(kept.value == "v3");
  CHECK(kept.expires_at_ms() == 5000);
  CHECK(kept.version() == Version{40, 3});

  // Expiry hides the value at and after expires_at.
  CHECK(kept.LiveAt(4999));
  CHECK_FALSE(kept.LiveAt(5000));
  // PERSIST (newer expiry, 0) makes it persistent again.
  const Envelope persisted = Merge(kept, Envelope::ExpiryOnly({50, 1}, 0));
  CHECK(persisted.LiveAt(UINT64_MAX));
  // A delete clears both registers.
  const Envelope del = Envelope::Plain({60, 1}, true, "");
  CHECK(Merge(persisted, del) == del);
}

// Random envelopes over a small domain so that versions collide often.
Envelope RandomEnvelope(std::mt19937_64& rng) {
  auto pick = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  const Version v{pick(4) + 1, static_cast<uint32_t>(pick(2))};
  const Version ev{pick(5), static_cast<uint32_t>(pick(2))};
  const uint64_t at = pick(3) * 100;
  static const char* kValues[] = {"a", "b", ""};
  switch (pick(4)) {
    case 0:
      return Envelope::Plain(v, false, kValues[pick(3)], at);
    case 1:
      return Envelope::Plain(v, true, "");
    case 2:
      return Envelope::ValueOnly(v, kValues[pick(3)]);
    default: {
      if (pick(2) == 0) return Envelope::ExpiryOnly(ev, at);
      Envelope e{v.timestamp, v.node_id, false, kValues[pick(3)]};
      e.SetExpiry(ev, at);
      return e;
    }
  }
}

TEST_CASE("merge is commutative, associative and idempotent (fixed seed)", "[envelope][ttl]") {
  std::mt19937_64 rng(20261202);
  for (int i = 0; i < 20000; ++i) {
    const Envelope a = RandomEnvelope(rng);
    const Envelope b = RandomEnvelope(rng);
    const Envelope c = RandomEnvelope(rng);
    INFO("iteration " << i);
    // Join laws, an upper bound of both inputs, lossless encoding of every shape it produces.
    const Envelope ab = merge_laws::RequireJoinLaws(a, b, c, /*valid_shape=*/false);
    // MergeInto agrees with Merge and classifies the outcome.
    Envelope stored = a;
    const MergeOutcome outcome = MergeInto(&stored, b);
    REQUIRE(stored == ab);
    const bool same_value = b.version() == Version{} || b.version() == a.version();
    const bool same_expiry =
        b.expiry_version() == Version{} || b.expiry_version() == a.expiry_version();
    if (ab == a && same_value && same_expiry) {
      REQUIRE(outcome == MergeOutcome::kDuplicate);
    } else if (ab == a) {
      REQUIRE(outcome == MergeOutcome::kSuperseded);
    } else {
      REQUIRE(outcome == MergeOutcome::kChanged);
    }
  }
}

}  // namespace
}  // namespace shardkv::storage
