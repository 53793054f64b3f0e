// The join laws the envelope merge's property tests check (design.md "Counters", "Hashes"):
// idempotent, commutative, associative, an upper bound of both inputs, lossless to encode, and
// of a shape the store accepts (`valid_shape`: the inputs are shapes writes produce). Catch2
// REQUIREs; returns a ⊔ b for further checks. And the encoding round trip they use.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "storage/value_envelope.h"

namespace shardkv::storage::merge_laws {

// `e` encoded and decoded again (REQUIREs that it decodes).
inline Envelope RoundTrip(const Envelope& e) {
  const std::string bytes = EncodeEnvelope(e);
  EnvelopeView view;
  const Status s = DecodeEnvelope(bytes, &view);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return view.ToEnvelope();
}

inline Envelope RequireJoinLaws(const Envelope& a, const Envelope& b, const Envelope& c,
                                bool valid_shape = true) {
  REQUIRE(Merge(a, a) == a);
  REQUIRE(Merge(a, b) == Merge(b, a));
  REQUIRE(Merge(Merge(a, b), c) == Merge(a, Merge(b, c)));
  const Envelope ab = Merge(a, b);
  REQUIRE(Merge(ab, a) == ab);
  REQUIRE(Merge(ab, b) == ab);
  REQUIRE(RoundTrip(ab) == ab);
  if (valid_shape) REQUIRE(ValidateEnvelopeShape(ab).ok());
  return ab;
}

}  // namespace shardkv::storage::merge_laws
