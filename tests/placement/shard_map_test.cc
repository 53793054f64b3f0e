#include "shardkv/shard_map.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <set>

#include "placement/test_util.h"
#include "shardkv/jump_hash.h"

using namespace shardkv;
using shardkv::testing::Nodes;

namespace {

void CheckWellFormed(const ShardMap& m) {
  for (int32_t s = 0; s < m.shard_count(); ++s) {
    auto row = m.ShardReplicas(s);
    REQUIRE(row.size() == static_cast<size_t>(m.replica_count()));
    std::set<uint32_t> distinct(row.begin(), row.end());
    REQUIRE(distinct.size() == row.size());
    for (uint32_t n : row) REQUIRE(n < m.nodes().size());
  }
}

void CheckBalanced(const ShardMap& m) {
  auto rc = m.ReplicaCounts(), pc = m.PrimaryCounts();
  auto ri = m.IdealReplicaCounts(), pi = m.IdealPrimaryCounts();
  for (size_t i = 0; i < m.nodes().size(); ++i) {
    INFO("node " << m.nodes()[i].name << " replicas " << rc[i] << " ideal " << ri[i]
                 << " primaries " << pc[i] << " ideal " << pi[i]);
    CHECK(std::abs(rc[i] - ri[i]) <= 1.0);
    CHECK(std::abs(pc[i] - pi[i]) <= 1.0);
  }
}

// (shard, node name) replica slots.
std::set<std::pair<int32_t, std::string>> Slots(const ShardMap& m) {
  std::set<std::pair<int32_t, std::string>> out;
  for (int32_t s = 0; s < m.shard_count(); ++s) {
    for (uint32_t n : m.ShardReplicas(s)) out.insert({s, m.nodes()[n].name});
  }
  return out;
}

}  // namespace

TEST_CASE("shard map: balanced, distinct replicas, for many shapes", "[shardmap]") {
  struct Shape {
    std::vector<NodeSpec> nodes;
    int32_t shards;
    int replicas;
  };
  std::vector<Shape> shapes = {
      {Nodes(3), 1024, 3},
      {Nodes(4), 1024, 3},
      {Nodes(10), 1024, 3},
      {Nodes(7), 1000, 2},
      {Nodes(5), 16, 1},
      {Nodes(3), 1, 3},
      {{{"a", 4}, {"b", 2}, {"c", 1}, {"d", 1}, {"e", 1}}, 1024, 3},
      // a's proportional ideal (10/12 * 3072) is above 1024, so it is capped at every shard and
      // the excess spreads over b and c.
      {{{"a", 10}, {"b", 1}, {"c", 1}, {"d", 1}}, 1024, 3},
  };
  for (const auto& shape : shapes) {
    auto m = ShardMap::Create(shape.nodes, shape.shards, shape.replicas);
    REQUIRE(m.ok());
    CheckWellFormed(*m);
    CheckBalanced(*m);
  }
  auto capped = ShardMap::Create({{"a", 10}, {"b", 1}, {"c", 1}, {"d", 1}}, 1024, 3);
  REQUIRE(capped.ok());
  CHECK(capped->ReplicaCounts()[0] == 1024);
}

TEST_CASE("shard map: independent of membership order", "[shardmap]") {
  auto nodes = Nodes(6);
  auto reversed = nodes;
  std::reverse(reversed.begin(), reversed.end());
  auto a = ShardMap::Create(nodes, 512, 3), b = ShardMap::Create(reversed, 512, 3);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  for (int32_t s = 0; s < 512; ++s) {
    auto ra = a->ShardReplicas(s), rb = b->ShardReplicas(s);
    for (int r = 0; r < 3; ++r) REQUIRE(a->nodes()[ra[r]].name == b->nodes()[rb[r]].name);
  }
}

TEST_CASE("shard map: adding a node moves replicas only to it, minimally", "[shardmap]") {
  for (int start : {3, 4, 9}) {
    for (int rf : {1, 2, 3}) {
      auto m = ShardMap::Create(Nodes(start), 1024, rf);
      REQUIRE(m.ok());
      auto next = m->WithNodeAdded({"new-node", 1});
      REQUIRE(next.ok());
      CheckWellFormed(*next);
      CheckBalanced(*next);
      auto before = Slots(*m), after = Slots(*next);
      int64_t created = 0;
      for (const auto& slot : after) {
        if (!before.count(slot)) {
          REQUIRE(slot.second == "new-node");  // only the new node receives
          ++created;
        }
      }
      // Minimal: the new node's target count, no more. Ideal copies fraction = 1/(n+1).
      const double ideal = 1024.0 * rf / (start + 1);
      INFO("start " << start << " rf " << rf << " created " << created << " ideal " << ideal);
      CHECK(std::abs(created - ideal) <= 1.0);
      CHECK(created == m->CopiesToCreate(*next));
    }
  }
}

TEST_CASE("shard map: removing a node moves only its replicas", "[shardmap]") {
  for (int start : {4, 5, 10}) {
    auto m = ShardMap::Create(Nodes(start), 1024, 3);
    REQUIRE(m.ok());
    const std::string gone = m->nodes()[1].name;  // a middle node
    auto next = m->WithNodeRemoved(gone);
    REQUIRE(next.ok());
    CheckWellFormed(*next);
    CheckBalanced(*next);
    auto before = Slots(*m), after = Slots(*next);
    int64_t lost = 0;
    for (const auto& slot : before) {
      if (!after.count(slot)) {
        REQUIRE(slot.second == gone);  // every slot that disappears is the leaving node's
        ++lost;
      }
    }
    CHECK(lost == m->ReplicaCounts()[1]);
    CHECK(m->CopiesToCreate(*next) == lost);
  }
}

TEST_CASE("shard map: a sequence of joins and leaves stays balanced", "[shardmap]") {
  auto m = ShardMap::Create(Nodes(3), 1024, 3);
  REQUIRE(m.ok());
  ShardMap cur = *m;
  for (int step = 0; step < 6; ++step) {
    auto grown = cur.WithNodeAdded({"extra-" + std::to_string(step), step % 2 ? 2.0 : 1.0});
    REQUIRE(grown.ok());
    cur = *grown;
    CheckWellFormed(cur);
    CheckBalanced(cur);
  }
  for (const std::string name : {"cache-01", "extra-2", "cache-00"}) {
    auto shrunk = cur.WithNodeRemoved(name);
    REQUIRE(shrunk.ok());
    cur = *shrunk;
    CheckWellFormed(cur);
    CheckBalanced(cur);
  }
}

TEST_CASE("shard map: primaries stay put where they can", "[shardmap]") {
  auto m = ShardMap::Create(Nodes(4), 1024, 3);
  REQUIRE(m.ok());
  auto next = m->WithNodeAdded({"new-node", 1});
  REQUIRE(next.ok());
  int changed = 0;
  for (int32_t s = 0; s < 1024; ++s) {
    changed += m->nodes()[m->Primary(s)].name != next->nodes()[next->Primary(s)].name;
  }
  // The new node must lead ~1024/5 shards; few others should change hands.
  CHECK(changed <= 1024 / 5 + 64);
}

TEST_CASE("shard map: errors", "[shardmap]") {
  CHECK(ShardMap::Create({}, 16, 1).status().IsInvalidArgument());
  CHECK(ShardMap::Create(Nodes(2), 0, 1).status().IsInvalidArgument());
  CHECK(ShardMap::Create(Nodes(2), 16, 3).status().IsInvalidArgument());
  CHECK(ShardMap::Create(Nodes(2), 16, 0).status().IsInvalidArgument());
  CHECK(ShardMap::Create({{"a", 1}, {"a", 1}}, 16, 1).status().IsInvalidArgument());
  auto m = ShardMap::Create(Nodes(3), 16, 3);
  REQUIRE(m.ok());
  CHECK(m->WithNodeAdded({"cache-00", 1}).status().IsInvalidArgument());
  CHECK(m->WithNodeAdded({"x", 0}).status().IsInvalidArgument());
  CHECK(m->WithNodeRemoved("nope").status().IsNotFound());
  CHECK(m->WithNodeRemoved("cache-00").status().code() == Status::Code::kFailedPrecondition);

  CHECK(ShardMap::FromAssignment(Nodes(2), {{0, 1}, {1, 1}}).status().IsInvalidArgument());
  CHECK(ShardMap::FromAssignment(Nodes(2), {{0, 2}}).status().IsInvalidArgument());
  CHECK(ShardMap::FromAssignment(Nodes(2), {{0, 1}, {1}}).status().IsInvalidArgument());
  CHECK(ShardMap::FromAssignment(Nodes(2), {}).status().IsInvalidArgument());
}

TEST_CASE("shard map: round-trips through its assignment", "[shardmap]") {
  auto m = ShardMap::Create(Nodes(5), 64, 2);
  REQUIRE(m.ok());
  std::vector<std::vector<uint32_t>> rows;
  for (int32_t s = 0; s < 64; ++s) {
    auto r = m->ShardReplicas(s);
    rows.emplace_back(r.begin(), r.end());
  }
  auto back = ShardMap::FromAssignment(m->nodes(), rows);
  REQUIRE(back.ok());
  CHECK(m->CopiesToCreate(*back) == 0);
  for (int32_t s = 0; s < 64; ++s) CHECK(back->Primary(s) == m->Primary(s));
}

TEST_CASE("sharded placement: jump into shards, then the shard's replicas", "[shardmap]") {
  auto m = ShardMap::Create(Nodes(4), 1024, 3);
  REQUIRE(m.ok());
  auto p = ShardedPlacement::Build(*m);
  REQUIRE(p.ok());
  auto keys = shardkv::testing::Keys(100000);
  std::vector<uint32_t> out;
  for (int i = 0; i < 1000; ++i) {
    const uint64_t t = (*p)->KeyToken(keys[i]);
    const int32_t shard = JumpHash(t, 1024);
    CHECK((*p)->Owner(t) == m->Primary(shard));
    REQUIRE((*p)->Replicas(t, 4, &out).ok());
    CHECK(std::equal(out.begin(), out.begin() + 3, m->ShardReplicas(shard).begin()));
    std::set<uint32_t> distinct(out.begin(), out.end());
    CHECK(distinct.size() == 4);
  }
  auto shares = shardkv::testing::SharesPct(**p, keys);
  for (double s : shares) CHECK(s == Approx(25).margin(1.0));
}
