#include "storage/value_envelope.h"

#include <catch2/catch.hpp>

namespace shardkv::storage {
namespace {

TEST_CASE("envelope encoding is stable (golden bytes)", "[envelope]") {
  const Envelope e{0x0102030405060708ULL, 300, false, "v"};
  const std::string bytes = EncodeEnvelope(e);
  // format 1, flags 0, fixed64 LE timestamp, varint32(300) = AC 02, value.
  CHECK(bytes == std::string("\x01\x00\x08\x07\x06\x05\x04\x03\x02\x01\xAC\x02v", 13));

  const std::string tomb = EncodeEnvelope(Envelope{5, 1, true, ""});
  CHECK(tomb == std::string("\x01\x01\x05\x00\x00\x00\x00\x00\x00\x00\x01", 11));
  CHECK(tomb.size() == kEnvelopeMinBytes);
}

TEST_CASE("envelopes round-trip", "[envelope]") {
  for (uint64_t ts : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 48, UINT64_MAX}) {
    for (uint32_t node : {0u, 127u, 128u, 16384u, UINT32_MAX}) {
      for (bool tombstone : {false, true}) {
        const Envelope e{ts, node, tombstone, tombstone ? "" : std::string("value\0x", 7)};
        const std::string bytes = EncodeEnvelope(e);
        EnvelopeView view;
        REQUIRE(DecodeEnvelope(bytes, &view).ok());
        CHECK(view.ToEnvelope() == e);
      }
    }
  }
}

TEST_CASE("malformed envelopes are refused", "[envelope]") {
  EnvelopeView view;
  CHECK(DecodeEnvelope("", &view).code() == Status::Code::kCorruption);

  std::string future = EncodeEnvelope(Envelope{1, 1, false, "x"});
  future[0] = 6;
  const Status s = DecodeEnvelope(future, &view);
  CHECK(s.code() == Status::Code::kNotSupported);
  CHECK(s.message().find("format 6") != std::string::npos);

  const std::string good = EncodeEnvelope(Envelope{1, 1, false, "x"});
  CHECK(DecodeEnvelope(good.substr(0, 10), &view).code() == Status::Code::kCorruption);

  std::string flags = good;
  flags[1] = 0x02;
  CHECK(DecodeEnvelope(flags, &view).code() == Status::Code::kCorruption);

  std::string tomb_with_value = EncodeEnvelope(Envelope{1, 1, true, ""}) + "x";
  CHECK(DecodeEnvelope(tomb_with_value, &view).code() == Status::Code::kCorruption);

  // A node id varint that never terminates.
  std::string bad_varint = good.substr(0, 10) + std::string(6, '\x80');
  CHECK(DecodeEnvelope(bad_varint, &view).code() == Status::Code::kCorruption);
}

TEST_CASE("versions order by timestamp, then node id", "[envelope]") {
  CHECK(Version{2, 0} > Version{1, 9});
  CHECK(Version{2, 5} > Version{2, 4});
  CHECK(Version{2, 5} == Version{2, 5});
}

}  // namespace
}  // namespace shardkv::storage
