// The join laws the envelope merge's property tests check (design.md "Counters", "Hashes"):
// idempotent, commutative, associative, an upper bound of both inputs, lossless to encode, and
// of a shape the store accepts. Catch2 REQUIREs; returns a ⊔ b for further checks.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "storage/value_envelope.h"

namespace shardkv::storage::testing {

inline Envelope RequireJoinLaws(const Envelope& a, const Envelope& b, const Envelope& c) {
  REQUIRE(Merge(a, a) == a);
  REQUIRE(Merge(a, b) == Merge(b, a));
  REQUIRE(Merge(Merge(a, b), c) == Merge(a, Merge(b, c)));
  const Envelope ab = Merge(a, b);
  REQUIRE(Merge(ab, a) == ab);
  REQUIRE(Merge(ab, b) == ab);
  const std::string bytes = EncodeEnvelope(ab);
  EnvelopeView view;
  REQUIRE(DecodeEnvelope(bytes, &view).ok());
  REQUIRE(view.ToEnvelope() == ab);
  REQUIRE(ValidateEnvelopeShape(ab).ok());
  return ab;
}

}  // namespace shardkv::storage::testing
