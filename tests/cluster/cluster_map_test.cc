#include "shardkv/cluster_map.h"

#include <catch2/catch.hpp>
#include <set>

#include "clustermap/cluster_map_builder.h"
#include "clustermap/cluster_map_rep.h"
#include "shardkv/hash.h"
#include "shardkv/jump_hash.h"
#include "shardkv/shard_map.h"

using namespace shardkv;

namespace {

std::vector<ClusterNode> ThreeNodes() {
  return {{1, "127.0.0.1:7001", 1, NodeState::kUp},
          {2, "127.0.0.1:7002", 1, NodeState::kUp},
          {3, "127.0.0.1:7003", 2, NodeState::kUp}};
}

}  // namespace

TEST_CASE("cluster map: ring mode tokens and replicas", "[clustermap]") {
  auto m = ClusterMap::Create(42, {}, ThreeNodes(), 1);
  REQUIRE(m.ok());
  CHECK(m->epoch() == 1);
  CHECK(m->EffectiveReplicas() == 3);
  CHECK(m->TokenOf("user:1") == hash::Xxh3("user:1"));
  for (int i = 0; i < 1000; ++i) {
    auto r = m->Replicas(m->TokenOf("k" + std::to_string(i)));
    REQUIRE(r.size() == 3);
    CHECK(std::set<uint32_t>(r.begin(), r.end()).size() == 3);
  }
  REQUIRE(m->ring() != nullptr);
  CHECK(m->shard_map() == nullptr);
}

TEST_CASE("cluster map: jump mode tokens carry the shard in the top bits", "[clustermap]") {
  ClusterParams p;
  p.mode = PlacementMode::kJump;
  p.shards = 64;
  p.replication_factor = 2;
  p.write_quorum = p.read_quorum = 1;
  auto m = ClusterMap::Create(7, p, ThreeNodes(), 1);
  REQUIRE(m.ok());
  REQUIRE(m->shard_map() != nullptr);
  const uint64_t h = hash::Xxh3("user:9");
  const uint64_t t = m->TokenOf("user:9");
  CHECK((t >> 32) == static_cast<uint64_t>(JumpHash(h, 64)));
  CHECK((t & 0xffffffffu) == (h & 0xffffffffu));
  auto r = m->Replicas(t);
  REQUIRE(r.size() == 2);
  CHECK(r[0] != r[1]);
}

TEST_CASE("cluster map: encode/decode round trip and content hash", "[clustermap]") {
  for (auto mode : {PlacementMode::kRing, PlacementMode::kJump}) {
    ClusterParams p;
    p.mode = mode;
    p.shards = 128;
    auto m = ClusterMap::Create(99, p, ThreeNodes(), 2);
    REQUIRE(m.ok());
    auto back = ClusterMap::Decode(m->Encode());
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(back->ContentHash() == m->ContentHash());
    CHECK(back->nodes() == m->nodes());
    CHECK(back->params() == m->params());
    for (int i = 0; i < 200; ++i) {
      const uint64_t t = m->TokenOf("x" + std::to_string(i));
      CHECK(back->Replicas(t) == m->Replicas(t));
    }
    auto next = clustermap::WithEpoch(*m, 5, 3);
    CHECK(next.epoch() == 5);
    CHECK(next.ContentHash() != m->ContentHash());
  }
}

TEST_CASE("cluster map: errors", "[clustermap]") {
  CHECK(ClusterMap::Create(1, {}, {}, 1).status().IsInvalidArgument());
  auto dup = ThreeNodes();
  dup[1].id = 1;
  CHECK(ClusterMap::Create(1, {}, dup, 1).status().IsInvalidArgument());
  auto dup_addr = ThreeNodes();
  dup_addr[1].address = dup_addr[0].address;
  CHECK(ClusterMap::Create(1, {}, dup_addr, 1).status().IsInvalidArgument());
  ClusterParams bad;
  bad.write_quorum = 4;
  CHECK(ClusterMap::Create(1, bad, ThreeNodes(), 1).status().IsInvalidArgument());
  auto weightless = ThreeNodes();
  weightless[0].weight = 0;
  CHECK(ClusterMap::Create(1, {}, weightless, 1).status().IsInvalidArgument());

  CHECK(ClusterMap::Decode("").status().code() == Status::Code::kCorruption);
  CHECK(ClusterMap::Decode("garbage!").status().code() == Status::Code::kCorruption);
  auto m = ClusterMap::Create(1, {}, ThreeNodes(), 1);
  REQUIRE(m.ok());
  std::string bytes = m->Encode();
  std::string truncated = bytes.substr(0, bytes.size() / 16 * 8);
  CHECK_FALSE(ClusterMap::Decode(truncated).ok());
  // formatVersion is the root struct's first data word: after the 8-byte segment table and the
  // 8-byte root pointer.
  bytes[16] = 99;
  auto future = ClusterMap::Decode(bytes);
  CHECK(future.status().code() == Status::Code::kFailedPrecondition);
  CHECK(future.status().message().find("99") != std::string::npos);
}

namespace {

// Replaces the one little-endian occurrence of `from` in an encoded map by `to`: how a test makes
// a map that Create would refuse but a hostile or corrupt peer could send.
std::string PatchU32(std::string bytes, uint32_t from, uint32_t to) {
  std::string needle(reinterpret_cast<const char*>(&from), sizeof from);
  const size_t at = bytes.find(needle);
  REQUIRE(at != std::string::npos);
  REQUIRE(bytes.find(needle, at + 1) == std::string::npos);
  bytes.replace(at, sizeof to, reinterpret_cast<const char*>(&to), sizeof to);
  return bytes;
}

}  // namespace

TEST_CASE("cluster map: a decoded map is bounded in what its placement allocates", "[clustermap]") {
  ClusterParams ring;
  ring.vnodes = 74565;  // a value whose bytes occur once in the encoding
  auto m = ClusterMap::Create(1, ring, ThreeNodes(), 1);
  REQUIRE(m.ok());
  // 2^30 vnodes on 3 nodes would be over 3 * 2^30 ring points (48 GiB): refused before building.
  auto huge = ClusterMap::Decode(PatchU32(m->Encode(), 74565, uint32_t{1} << 30));
  CHECK(huge.status().IsInvalidArgument());
  CHECK(huge.status().message().find("ceiling") != std::string::npos);
  // More than Create allows still decodes (a map of an older build keeps loading): the ceiling
  // is far above Create's limit. (Right under the ceiling takes seconds: not in a unit test.)
  double weights = 0;
  for (const ClusterNode& n : ThreeNodes()) weights += n.weight;
  CHECK(static_cast<double>(clustermap::kMaxDecodedRingPoints) / weights > 20.0 * kMaxVnodes);
  auto big = ClusterMap::Decode(PatchU32(m->Encode(), 74565, 2 * kMaxVnodes));
  INFO(big.status().ToString());
  CHECK(big.ok());

  ClusterParams jump;
  jump.mode = PlacementMode::kJump;
  jump.shards = 1031;
  auto j = ClusterMap::Create(1, jump, ThreeNodes(), 1);
  REQUIRE(j.ok());
  // The shard rows travel with the map, so a bigger count also fails on the row count; the
  // ceiling refuses it first, with its own message.
  auto shards = ClusterMap::Decode(PatchU32(j->Encode(), 1031, uint32_t{1} << 31));
  CHECK(shards.status().IsInvalidArgument());
  CHECK(shards.status().message().find("ceiling") != std::string::npos);
  // Create's own limits are unchanged.
  ring.vnodes = kMaxVnodes + 1;
  CHECK(ClusterMap::Create(1, ring, ThreeNodes(), 1).status().IsInvalidArgument());
}

TEST_CASE("cluster map: node updates keep placement", "[clustermap]") {
  auto m = ClusterMap::Create(1, {}, ThreeNodes(), 1);
  REQUIRE(m.ok());
  auto down = clustermap::WithNodeUpdated(*m, 2, NodeState::kDown, "127.0.0.1:8002");
  REQUIRE(down.ok());
  CHECK(down->FindNode(2)->state == NodeState::kDown);
  CHECK(down->FindNodeByAddress("127.0.0.1:8002")->id == 2);
  CHECK(down->Replicas(123) == m->Replicas(123));
  CHECK(clustermap::WithNodeUpdated(*m, 9, NodeState::kUp).status().IsNotFound());
  CHECK(clustermap::WithNodeUpdated(*m, 2, NodeState::kUp, "127.0.0.1:7001")
            .status()
            .IsInvalidArgument());
}
