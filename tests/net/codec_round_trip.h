// Round-trip helpers shared by the codec tests: encode a message into one frame, decode its
// payload, and check that the header fields came back unchanged.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "net/codec.h"
#include "net/messages.h"

namespace shardkv::net::testing {

// The payload of the single frame in `framed`.
inline std::string PayloadOf(const std::string& framed) {
  REQUIRE(framed.size() >= kFrameHeaderBytes);
  return framed.substr(kFrameHeaderBytes);
}

inline Request RoundTrip(const Request& in) {
  std::string framed;
  REQUIRE(EncodeRequest(in, &framed).ok());
  auto out = DecodeRequest(PayloadOf(framed));
  REQUIRE(out.ok());
  CHECK(out->id == in.id);
  CHECK(out->epoch == in.epoch);
  CHECK(out->cluster_id == in.cluster_id);
  CHECK(out->client_ts == in.client_ts);
  CHECK(out->deadline_ms == in.deadline_ms);
  CHECK(out->consistency == in.consistency);
  REQUIRE(out->body.index() == in.body.index());
  return std::move(out).value();
}

inline Response RoundTrip(const Response& in) {
  std::string framed;
  REQUIRE(EncodeResponse(in, &framed).ok());
  auto out = DecodeResponse(PayloadOf(framed));
  REQUIRE(out.ok());
  CHECK(out->id == in.id);
  CHECK(out->epoch == in.epoch);
  CHECK(out->ts == in.ts);
  CHECK(out->cluster_map == in.cluster_map);
  REQUIRE(out->body.index() == in.body.index());
  return std::move(out).value();
}

}  // namespace shardkv::net::testing
