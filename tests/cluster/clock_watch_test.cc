// ClockWatch (design.md "Clock offsets"): the offset from one round trip, and the verdict that
// a node's clock is off a majority's.
#include "cluster/clock_watch.h"

#include <catch2/catch.hpp>

namespace shardkv::cluster {
namespace {

using std::chrono::seconds;

TEST_CASE("clock watch: a node off a majority by more than the offset is skewed", "[clock]") {
  // Node 3 runs 3 s ahead of nodes 1, 2 and 4 (round trips of 10 ms).
  ClockWatch three(3, 500, seconds(3));
  for (uint32_t peer : {1u, 2u, 4u}) three.Record(peer, 103000, 103010, 100005);
  const ClockVerdict v = three.Judge({1, 2, 3, 4});
  CHECK(v.skewed);
  CHECK(v.offset_ms == 3000);
  CHECK(v.agreeing.empty());
  INFO(v.reason);
  CHECK(v.reason.find("3000 ms ahead of nodes 1, 2, 4") != std::string::npos);
  // Node 1 sees one node of four off: it is the one that agrees with the majority.
  ClockWatch one(1, 500, seconds(3));
  one.Record(2, 100000, 100010, 100005);
  one.Record(3, 100000, 100010, 103005);
  one.Record(4, 100000, 100010, 100004);
  const ClockVerdict healthy = one.Judge({1, 2, 3, 4});
  CHECK_FALSE(healthy.skewed);
  CHECK(healthy.agreeing == std::vector<uint32_t>{2, 4});
}

TEST_CASE("clock watch: within the offset, its error, or without a majority, not skewed",
          "[clock]") {
  ClockWatch w(1, 500, seconds(3));
  // 600 ms off, but the round trip was 400 ms: the offset may be as small as 399 ms.
  w.Record(2, 100000, 100400, 99600);
  w.Record(3, 100000, 100400, 99600);
  CHECK_FALSE(w.Judge({1, 2, 3}).skewed);
  // Two nodes: the other one's clock against ours, neither is a majority.
  ClockWatch pair(1, 500, seconds(3));
  pair.Record(2, 100000, 100010, 90000);
  const ClockVerdict v = pair.Judge({1, 2});
  CHECK_FALSE(v.skewed);
  CHECK(v.offset_ms == 10005);
  // Behind by 2 s against two of three.
  ClockWatch behind(1, 500, seconds(3));
  behind.Record(2, 100000, 100010, 102005);
  behind.Record(3, 100000, 100010, 102005);
  const ClockVerdict b = behind.Judge({1, 2, 3});
  CHECK(b.skewed);
  CHECK(b.offset_ms == -2000);
  CHECK(b.reason.find("2000 ms behind") != std::string::npos);
  // A sample from a node no longer in the map does not count.
  CHECK_FALSE(behind.Judge({1, 2, 4, 5}).skewed);
}

}  // namespace
}  // namespace shardkv::cluster
