// The anti-entropy ops (net/repair_messages.h, anti_entropy.capnp) survive a round trip through
// the codec, every field set to a non-default value.
#include <catch2/catch.hpp>

#include "net/codec.h"
#include "net/codec_round_trip.h"
#include "net/messages.h"

namespace shardkv::net {

using testing::RoundTrip;

TEST_CASE("codec: anti-entropy requests round trip") {
  Request r;
  r.id = 7;
  r.epoch = 3;
  r.body =
      AntiEntropyRequest{TreeQuery{11, 5, UINT64_MAX, {{5, 9}, {10, UINT64_MAX}}, true, 0, {}}};
  CHECK(std::get<AntiEntropyRequest>(RoundTrip(r).body) == std::get<AntiEntropyRequest>(r.body));
  // A release that reports a complete repair (the GC horizon).
  r.body = AntiEntropyRequest{TreeQuery{12, 5, 9, {}, true, 1733150000000, {3, 1, 2}}};
  CHECK(std::get<AntiEntropyRequest>(RoundTrip(r).body) == std::get<AntiEntropyRequest>(r.body));

  RepairEntry e{42, std::string("k\0y", 3), 99, 2, true, "", {true, true, 77, 3, 1234}};
  RepairEntry plain{43, "key", 100, 1, false, std::string("v\0v", 3), {}};
  r.body = AntiEntropyRequest{ApplyEntries{{e, plain}}};
  CHECK(std::get<AntiEntropyRequest>(RoundTrip(r).body) == std::get<AntiEntropyRequest>(r.body));

  r.body = AntiEntropyRequest{RepairCommand{true, 17, 3, 900, 1500}};
  CHECK(std::get<AntiEntropyRequest>(RoundTrip(r).body) == std::get<AntiEntropyRequest>(r.body));
}

TEST_CASE("codec: anti-entropy replies round trip") {
  Response r;
  r.id = 9;
  r.body = AntiEntropyResponse{TreeReply{{{1, 2}, {UINT64_MAX, 0}}}};
  CHECK(std::get<AntiEntropyResponse>(RoundTrip(r).body) == std::get<AntiEntropyResponse>(r.body));
  r.body = AntiEntropyResponse{ApplyCounts{4, 5, 6}};
  CHECK(std::get<AntiEntropyResponse>(RoundTrip(r).body) == std::get<AntiEntropyResponse>(r.body));
  RepairReport rep;
  rep.ranges_compared = 1;
  rep.ranges_differed = 2;
  rep.ranges_skipped = 3;
  rep.ranges_failed = 4;
  rep.leaves_differed = 5;
  rep.keys_fetched = 6;
  rep.bytes_fetched = 7;
  rep.tree_bytes = 8;
  rep.streamed = {{2, 9, 10}, {3, 11, 12}};
  rep.failures = {"tokens 1..2: node 3: Unavailable: down"};
  rep.next = 13;
  rep.done = true;
  rep.ranges_total = 14;
  r.body = AntiEntropyResponse{rep};
  CHECK(std::get<AntiEntropyResponse>(RoundTrip(r).body) == std::get<AntiEntropyResponse>(r.body));
  CHECK(OpName(r.body) == "antiEntropy");
}

}  // namespace shardkv::net
