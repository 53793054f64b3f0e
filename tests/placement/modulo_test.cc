#include "shardkv/modulo.h"

#include <catch2/catch.hpp>

#include "placement/test_util.h"

using namespace shardkv;

TEST_CASE("modulo: owner is token mod N, replicas are the next indexes", "[modulo]") {
  auto m = Modulo::Build(shardkv::testing::Nodes(3));
  REQUIRE(m.ok());
  CHECK((*m)->Owner(10) == 1);
  std::vector<uint32_t> out;
  REQUIRE((*m)->Replicas(10, 2, &out).ok());
  CHECK(out == std::vector<uint32_t>{1, 2});
  REQUIRE((*m)->Replicas(11, 3, &out).ok());
  CHECK(out == std::vector<uint32_t>{2, 0, 1});
  CHECK((*m)->Replicas(11, 4, &out).IsInvalidArgument());
  CHECK(Modulo::Build({}).status().IsInvalidArgument());
}

TEST_CASE("modulo: 10 -> 11 nodes moves about 1 - 1/11 of the keys", "[modulo]") {
  auto a = Modulo::Build(shardkv::testing::Nodes(10));
  auto b = Modulo::Build(shardkv::testing::Nodes(11));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto keys = shardkv::testing::Keys(100000);
  int moved = 0;
  for (const auto& k : keys) moved += (*a)->OwnerOfKey(k) != (*b)->OwnerOfKey(k);
  CHECK(moved / 100000.0 == Approx(1 - 1 / 11.0).margin(0.01));
}
