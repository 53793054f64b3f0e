#include "shardkv/rendezvous.h"

#include <catch2/catch.hpp>
#include <set>

#include "placement/test_util.h"

using namespace shardkv;

TEST_CASE("rendezvous: weighted shares, distinct replicas, errors", "[rendezvous]") {
  auto r = Rendezvous::Build({{"a", 3}, {"b", 1}});
  REQUIRE(r.ok());
  auto keys = shardkv::testing::Keys(100000);
  auto shares = shardkv::testing::SharesPct(**r, keys);
  CHECK(shares[0] == Approx(75).margin(1));
  std::vector<uint32_t> out;
  REQUIRE((*r)->Replicas(12345, 2, &out).ok());
  CHECK(out[0] == (*r)->Owner(12345));
  CHECK(std::set<uint32_t>(out.begin(), out.end()).size() == 2);
  CHECK((*r)->Replicas(12345, 3, &out).IsInvalidArgument());
  CHECK(Rendezvous::Build({{"a", 0}}).status().IsInvalidArgument());
}
