// Round trips of the scan ops (scan, replicaScan) through the codec, binary keys and patterns
// included. The helpers mirror codec_stream_test.cc's.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>

#include "net/codec.h"
#include "net/codec_round_trip.h"
#include "net/messages.h"

namespace shardkv::net {
namespace {

Request ScanRoundTrip(RequestBody body) {
  Request in;
  in.id = 42;
  in.epoch = 7;
  in.consistency = Consistency::kOne;
  in.body = std::move(body);
  return testing::RoundTrip(in);
}

Response RoundTripResponse(ResponseBody body) {
  Response in;
  in.id = 9;
  in.epoch = 3;
  in.body = std::move(body);
  return testing::RoundTrip(in);
}

const std::string kBinary("a\0b\xff*", 5);

}  // namespace

TEST_CASE("codec: scan request and response round-trip", "[net][codec][scan]") {
  const Request r = ScanRoundTrip(ScanRequest{~uint64_t{0} - 1, 1000, kBinary});
  CHECK(r.consistency == Consistency::kOne);
  const auto& scan = std::get<ScanRequest>(r.body);
  CHECK(scan.cursor == ~uint64_t{0} - 1);
  CHECK(scan.count == 1000);
  CHECK(scan.match == kBinary);
  CHECK(std::get<ScanRequest>(ScanRoundTrip(ScanRequest{}).body).match.empty());
  CHECK(OpName(r.body) == "scan");

  const auto out =
      std::get<ScanResponse>(RoundTripResponse(ScanResponse{{"k1", kBinary}, 12345}).body);
  CHECK(out.keys == std::vector<std::string>{"k1", kBinary});
  CHECK(out.cursor == 12345);
  CHECK(std::get<ScanResponse>(RoundTripResponse(ScanResponse{}).body).keys.empty());
}

TEST_CASE("codec: replicaScan request and response round-trip", "[net][codec][scan]") {
  const auto req = std::get<ReplicaScanRequest>(
      ScanRoundTrip(ReplicaScanRequest{5, ~uint64_t{0}, 64, uint64_t{1} << 22, "user:*"}).body);
  CHECK(req.first == 5);
  CHECK(req.last == ~uint64_t{0});
  CHECK(req.max_entries == 64);
  CHECK(req.max_bytes == uint64_t{1} << 22);
  CHECK(req.match == "user:*");

  ReplicaScanResponse in;
  in.entries = {ScanEntry{1, "a", 100, 2, false, 0, 0},
                ScanEntry{~uint64_t{0}, kBinary, 7, 3, true, 120, 4}};
  in.next = 99;
  in.done = false;
  in.examined = 17;
  const auto out = std::get<ReplicaScanResponse>(RoundTripResponse(in).body);
  REQUIRE(out.entries.size() == 2);
  CHECK(out.entries[1].token == ~uint64_t{0});
  CHECK(out.entries[1].key == kBinary);
  CHECK(out.entries[1].ts == 7);
  CHECK(out.entries[1].node_id == 3);
  CHECK(out.entries[1].hidden);
  CHECK(out.entries[1].expiry_ts == 120);
  CHECK(out.entries[1].expiry_node_id == 4);
  CHECK_FALSE(out.entries[0].hidden);
  CHECK(out.next == 99);
  CHECK_FALSE(out.done);
  CHECK(out.examined == 17);
  CHECK(std::get<ReplicaScanResponse>(RoundTripResponse(ReplicaScanResponse{{}, 0, true, 0}).body)
            .done);
}

}  // namespace shardkv::net
