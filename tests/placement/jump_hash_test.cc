#include "shardkv/jump_hash.h"

#include <catch2/catch.hpp>

#include "placement/test_util.h"

using namespace shardkv;

TEST_CASE("jump: golden vectors from the reference implementation", "[jump]") {
  // ../shared/reference.md: buckets for n = 1..20.
  const std::vector<std::pair<uint64_t, std::vector<int>>> golden = {
      {0, std::vector<int>(20, 0)},
      {1, {0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 17, 17, 17}},
      {0xdeadbeef, {0, 1, 2, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 16, 16, 16, 16}},
      {0x0ddc0ffeebadf00dull, {0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 15, 15, 15, 15, 15}},
  };
  for (const auto& [key, buckets] : golden) {
    for (int n = 1; n <= 20; ++n) {
      INFO("key " << key << " n " << n);
      CHECK(JumpHash(key, n) == buckets[n - 1]);
    }
  }
}

TEST_CASE("jump: bad bucket counts", "[jump]") {
  CHECK(JumpHash(123, 0) == -1);
  CHECK(JumpHash(123, -5) == -1);
  CHECK(JumpHash(123, 1) == 0);
}

TEST_CASE("jump: growing n moves keys only into the new bucket", "[jump]") {
  shardkv::testing::SplitMix rng{99};
  int moved = 0;
  const int keys = 100000;
  for (int i = 0; i < keys; ++i) {
    const uint64_t k = rng.Next();
    const int32_t before = JumpHash(k, 10), after = JumpHash(k, 11);
    REQUIRE(before >= 0);
    REQUIRE(before < 10);
    if (before != after) {
      REQUIRE(after == 10);
      ++moved;
    }
  }
  CHECK(moved == Approx(keys / 11.0).epsilon(0.05));
}

TEST_CASE("jump placement: weights by repeated registration", "[jump]") {
  auto p = JumpPlacement::Build({{"a", 2}, {"b", 1}, {"c", 1}});
  REQUIRE(p.ok());
  auto keys = shardkv::testing::Keys(100000);
  auto shares = shardkv::testing::SharesPct(**p, keys);
  CHECK(shares[0] == Approx(50).margin(1));
  CHECK(shares[1] == Approx(25).margin(1));
  std::vector<uint32_t> out;
  REQUIRE((*p)->Replicas(5, 3, &out).ok());
  CHECK(out.size() == 3);
  CHECK((*p)->Replicas(5, 4, &out).IsInvalidArgument());
  CHECK(JumpPlacement::Build({}).status().IsInvalidArgument());
}
