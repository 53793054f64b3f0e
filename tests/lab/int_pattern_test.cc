#include "placement_lab/int_pattern.h"

#include <catch2/catch.hpp>

using shardkv::lab::IntPattern;

TEST_CASE("int pattern: formats the seeds' names and keys", "[lab][pattern]") {
  auto node = IntPattern::Parse("cache-%02d");
  REQUIRE(node.ok());
  CHECK(node->Format(0) == "cache-00");
  CHECK(node->Format(9) == "cache-09");
  CHECK(node->Format(10) == "cache-10");
  CHECK(node->Format(123) == "cache-123");

  auto key = IntPattern::Parse("user:%d");
  REQUIRE(key.ok());
  CHECK(key->Format(999999) == "user:999999");
  CHECK(key->is_signed());

  auto hex = IntPattern::Parse("sess:%016x");
  REQUIRE(hex.ok());
  CHECK(hex->Format(0xdeadbeefULL) == "sess:00000000deadbeef");
  CHECK(hex->Format(UINT64_MAX) == "sess:ffffffffffffffff");
  CHECK_FALSE(hex->is_signed());
}

TEST_CASE("int pattern: length modifiers are ignored, %% is literal", "[lab][pattern]") {
  auto p = IntPattern::Parse("100%% k%lu-%%");
  REQUIRE(p.ok());
  CHECK(p->Format(7) == "100% k7-%");
  auto q = IntPattern::Parse("%lld");
  REQUIRE(q.ok());
  CHECK(q->Format(5'000'000'000ULL) == "5000000000");  // 64-bit even with a 32-bit %d
  CHECK(IntPattern::Parse("%d")->Format(5'000'000'000ULL) == "5000000000");
}

TEST_CASE("int pattern: long output is not truncated", "[lab][pattern]") {
  std::string prefix(300, 'k');
  auto p = IntPattern::Parse(prefix + "%d");
  REQUIRE(p.ok());
  CHECK(p->Format(42) == prefix + "42");
  std::string out = "x";
  p->AppendTo(1, &out);
  CHECK(out == "x" + prefix + "1");
}

TEST_CASE("int pattern: rejects everything but one integer conversion", "[lab][pattern]") {
  for (const char* bad :
       {"user", "user:%s", "%d-%d", "user:%", "%*d", "%f", "%1000d", "%.500d", "%n", "%%"}) {
    INFO(bad);
    auto p = IntPattern::Parse(bad);
    REQUIRE_FALSE(p.ok());
    CHECK(p.status().IsInvalidArgument());
    CHECK(p.status().message().find("bad pattern") != std::string::npos);
  }
}
