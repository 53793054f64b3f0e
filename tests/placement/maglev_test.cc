#include "shardkv/maglev.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <set>

#include "placement/test_util.h"

using namespace shardkv;
using shardkv::testing::Nodes;

TEST_CASE("maglev: table size must be prime and >= 100 N", "[maglev]") {
  CHECK(Maglev::Build(Nodes(3), 65536).status().IsInvalidArgument());
  CHECK(Maglev::Build(Nodes(3), 251).status().IsInvalidArgument());
  auto small = Maglev::Build(Nodes(10), 997);
  REQUIRE_FALSE(small.ok());
  CHECK(small.status().message().find("100 x 10") != std::string::npos);
  CHECK(Maglev::Build(Nodes(10), 1009).ok());
  CHECK(Maglev::Build({}).status().IsInvalidArgument());
  CHECK(Maglev::Build({{"a", 1}, {"a", 2}}).status().IsInvalidArgument());
}

TEST_CASE("maglev: every slot filled, shares follow weights", "[maglev]") {
  auto m = Maglev::Build({{"a", 4}, {"b", 2}, {"c", 1}, {"d", 1}}, 10007);
  REQUIRE(m.ok());
  std::vector<int> slots(4, 0);
  for (uint64_t t = 0; t < 10007; ++t) ++slots[(*m)->Owner(t)];
  CHECK(slots[0] == Approx(10007 * 0.5).epsilon(0.01));
  CHECK(slots[1] == Approx(10007 * 0.25).epsilon(0.01));
  CHECK(slots[2] == Approx(10007 * 0.125).epsilon(0.02));
  CHECK((*m)->MemoryBytes() >= 10007 * sizeof(uint32_t));
}

TEST_CASE("maglev: replicas distinct, owner first, order independent", "[maglev]") {
  auto nodes = Nodes(5);
  auto m = Maglev::Build(nodes);
  REQUIRE(m.ok());
  std::vector<uint32_t> out;
  shardkv::testing::SplitMix rng{3};
  for (int i = 0; i < 2000; ++i) {
    const uint64_t t = rng.Next();
    REQUIRE((*m)->Replicas(t, 5, &out).ok());
    CHECK(out[0] == (*m)->Owner(t));
    CHECK(std::set<uint32_t>(out.begin(), out.end()).size() == 5);
  }
  CHECK((*m)->Replicas(1, 6, &out).IsInvalidArgument());
  std::reverse(nodes.begin(), nodes.end());
  auto r = Maglev::Build(nodes);
  REQUIRE(r.ok());
  for (uint64_t t = 0; t < 65537; t += 7) {
    REQUIRE((*m)->nodes()[(*m)->Owner(t)].name == (*r)->nodes()[(*r)->Owner(t)].name);
  }
}
