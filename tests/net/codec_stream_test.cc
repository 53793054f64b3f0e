// Round trips of the rebalancer's stream ops (streamScan, streamRange, countRanges) through the
// codec, and the failure of a truncated stream batch. The helpers mirror those in
// codec_test.cc; they are file-local there, and copying three short functions is simpler than
// a shared header for two files.
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "net/codec.h"
#include "net/codec_round_trip.h"
#include "net/messages.h"

namespace shardkv::net {
namespace {

Request RoundTrip(RequestBody body) {
  Request in;
  in.id = 42;
  in.epoch = 7;
  in.cluster_id = 0xC1C1;
  in.client_ts = 123456789;
  in.consistency = Consistency::kAll;
  in.body = std::move(body);
  return testing::RoundTrip(in);
}

Response ResponseOf(ResponseBody body) {
  Response in;
  in.id = 9;
  in.epoch = 3;
  in.ts = 77;
  in.body = std::move(body);
  return in;
}

std::string EncodedResponse(ResponseBody body) {
  std::string framed;
  REQUIRE(EncodeResponse(ResponseOf(std::move(body)), &framed).ok());
  return testing::PayloadOf(framed);
}

Response RoundTrip(ResponseBody body) { return testing::RoundTrip(ResponseOf(std::move(body))); }

// Binary bytes with NULs in the middle and at both ends, and a high byte.
const std::string kKey("\0k\0\xff\x01y\0", 7);
const std::string kValue("v\0\0\x80value", 9);
const std::string kCursor("\0cursor\0\xfe", 9);

StreamScanResponse ThreeEntryBatch() {
  StreamScanResponse s;
  s.entries.push_back({1, kKey, 100, 1, false, kValue, {}});
  s.entries.push_back({~uint64_t{0}, "k2", 200, 3, true, "", {}});  // tombstone: no value
  // A value with its own expiry register (TTLs), which must round-trip too.
  s.entries.push_back({0, "", 0, 0, false, std::string(5000, '\0'), {true, false, 9, 4, 1234}});
  s.cursor = kCursor;
  s.done = false;
  s.snapshot_renewed = true;
  s.range_index = 3;
  return s;
}

}  // namespace

TEST_CASE("codec: streamScan request round-trips", "[net][codec]") {
  {
    auto r =
        RoundTrip(StreamScanRequest{11, 5, ~uint64_t{0}, kCursor, 512, uint64_t{1} << 40, {}, 0});
    const auto& s = std::get<StreamScanRequest>(r.body);
    CHECK(s.stream_id == 11);
    CHECK(s.first == 5);
    CHECK(s.last == ~uint64_t{0});
    CHECK(s.cursor == kCursor);
    CHECK(s.max_entries == 512);
    CHECK(s.max_bytes == uint64_t{1} << 40);
    CHECK(s.ranges.empty());
  }
  {
    // A multi-range scan (a stream task of many ranges) carries its ranges and position.
    auto r = RoundTrip(StreamScanRequest{2, 0, 0, kCursor, 8, 9, {{1, 2}, {10, ~uint64_t{0}}}, 1});
    const auto& s = std::get<StreamScanRequest>(r.body);
    REQUIRE(s.ranges.size() == 2);
    CHECK(s.ranges[1].first == 10);
    CHECK(s.ranges[1].last == ~uint64_t{0});
    CHECK(s.range_index == 1);
  }
  {
    // The first batch of a range has no cursor.
    auto r = RoundTrip(StreamScanRequest{1, 0, 0, "", 0, 0, {}, 0});
    CHECK(std::get<StreamScanRequest>(r.body).cursor.empty());
  }
}

TEST_CASE("codec: streamScan response round-trips", "[net][codec]") {
  {
    const StreamScanResponse in = ThreeEntryBatch();
    const auto out = std::get<StreamScanResponse>(RoundTrip(in).body);
    REQUIRE(out.entries.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      INFO("entry " << i);
      CHECK(out.entries[i].token == in.entries[i].token);
      CHECK(out.entries[i].key == in.entries[i].key);
      CHECK(out.entries[i].ts == in.entries[i].ts);
      CHECK(out.entries[i].node_id == in.entries[i].node_id);
      CHECK(out.entries[i].tombstone == in.entries[i].tombstone);
      CHECK(out.entries[i].value == in.entries[i].value);
      CHECK(out.entries[i].expiry == in.entries[i].expiry);
    }
    CHECK(out.cursor == kCursor);
    CHECK_FALSE(out.done);
    CHECK(out.snapshot_renewed);
    CHECK(out.range_index == 3);
  }
  {
    StreamScanResponse empty;
    empty.done = true;
    const auto out = std::get<StreamScanResponse>(RoundTrip(empty).body);
    CHECK(out.entries.empty());
    CHECK(out.cursor.empty());
    CHECK(out.done);
    CHECK_FALSE(out.snapshot_renewed);
  }
}

TEST_CASE("codec: streamRange request and response round-trip", "[net][codec]") {
  {
    StreamRangeRequest in;
    in.change_id = 17;
    in.task_id = 4;
    in.first = 1000;
    in.last = 1999;
    in.source_ids = {3, 1, 0xFFFFFFFF};
    in.source_addresses = {"10.0.0.3:7000", "[::1]:7001", std::string("odd\0addr", 8)};
    in.merge_count = 2;
    in.rate_bytes_per_s = 50 << 20;
    in.slice_ms = 250;
    in.ranges = {{1000, 1499}, {1800, 1999}};
    const auto out = std::get<StreamRangeRequest>(RoundTrip(in).body);
    REQUIRE(out.ranges.size() == 2);
    CHECK(out.ranges[1].first == 1800);
    CHECK(out.change_id == 17);
    CHECK(out.task_id == 4);
    CHECK(out.first == 1000);
    CHECK(out.last == 1999);
    CHECK(out.source_ids == in.source_ids);
    CHECK(out.source_addresses == in.source_addresses);
    CHECK(out.merge_count == 2);
    CHECK(out.rate_bytes_per_s == 50 << 20);
    CHECK(out.slice_ms == 250);
  }
  {
    // No sources and zeroed fields decode as zero, not as the struct's C++ defaults: the wire
    // carries every field explicitly.
    StreamRangeRequest in;
    in.merge_count = 0;
    in.slice_ms = 0;
    const auto out = std::get<StreamRangeRequest>(RoundTrip(in).body);
    CHECK(out.source_ids.empty());
    CHECK(out.source_addresses.empty());
    CHECK(out.merge_count == 0);
    CHECK(out.slice_ms == 0);
  }
  {
    const auto out = std::get<StreamRangeResponse>(
        RoundTrip(StreamRangeResponse{true, 12345, 67, uint64_t{9} << 33, true, 5, 0, 7, 11}).body);
    CHECK(out.done);
    CHECK(out.copies == 12345);
    CHECK(out.tombstones == 67);
    CHECK(out.bytes == uint64_t{9} << 33);
    CHECK(out.resumed);
    CHECK(out.source_id == 5);
    CHECK(out.sources_merged == 0);
    CHECK(out.ranges_done == 7);
    CHECK(out.copies_during_change == 11);
  }
  {
    const auto out = std::get<StreamRangeResponse>(
        RoundTrip(StreamRangeResponse{false, 0, 0, 0, false, 0, 3, 0, 0}).body);
    CHECK_FALSE(out.done);
    CHECK_FALSE(out.resumed);
    CHECK(out.source_id == 0);
    CHECK(out.sources_merged == 3);
  }
}

TEST_CASE("codec: countRanges request and response round-trip", "[net][codec]") {
  {
    CountRangesRequest in;
    in.ranges = {{0, 99}, {100, 100}, {~uint64_t{0} - 1, ~uint64_t{0}}};
    const auto out = std::get<CountRangesRequest>(RoundTrip(in).body);
    REQUIRE(out.ranges.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(out.ranges[i].first == in.ranges[i].first);
      CHECK(out.ranges[i].last == in.ranges[i].last);
    }
  }
  CHECK(std::get<CountRangesRequest>(RoundTrip(CountRangesRequest{}).body).ranges.empty());
  {
    CountRangesResponse in;
    in.counts = {{10, 2, 4096}, {0, 0, 0}, {~uint64_t{0}, 1, uint64_t{1} << 50}};
    const auto out = std::get<CountRangesResponse>(RoundTrip(in).body);
    REQUIRE(out.counts.size() == 3);
    for (size_t i = 0; i < 3; ++i) {
      CHECK(out.counts[i].live == in.counts[i].live);
      CHECK(out.counts[i].tombstones == in.counts[i].tombstones);
      CHECK(out.counts[i].bytes == in.counts[i].bytes);
    }
  }
  CHECK(std::get<CountRangesResponse>(RoundTrip(CountRangesResponse{}).body).counts.empty());
}

TEST_CASE("codec: a truncated streamScan response fails cleanly", "[net][codec]") {
  const std::string payload = EncodedResponse(ThreeEntryBatch());
  REQUIRE(DecodeResponse(payload).ok());
  // Every word-aligned prefix: the segment table then promises more than is there.
  for (size_t cut = 8; cut < payload.size(); cut += 8) {
    INFO("cut at " << cut);
    CHECK(DecodeResponse(std::string_view(payload).substr(0, cut)).status().code() ==
          Status::Code::kCorruption);
  }
  // A prefix that is not a whole number of words is refused before parsing.
  CHECK(DecodeResponse(std::string_view(payload).substr(0, payload.size() - 3)).status().code() ==
        Status::Code::kCorruption);
}

TEST_CASE("codec: stream op names", "[net][codec]") {
  CHECK(OpName(RequestBody{StreamScanRequest{}}) == "streamScan");
  CHECK(OpName(RequestBody{StreamRangeRequest{}}) == "streamRange");
  CHECK(OpName(RequestBody{CountRangesRequest{}}) == "countRanges");
  CHECK(OpName(ResponseBody{StreamScanResponse{}}) == "streamScan");
  CHECK(OpName(ResponseBody{StreamRangeResponse{}}) == "streamRange");
  CHECK(OpName(ResponseBody{CountRangesResponse{}}) == "countRanges");
}

}  // namespace shardkv::net
