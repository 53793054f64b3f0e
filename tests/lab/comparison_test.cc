#include "placement_lab/comparison.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <numeric>

using namespace shardkv;
using namespace shardkv::lab;

namespace {

LabMembership Members(int n, std::vector<double> weights = {}) {
  MembershipSpec spec;
  spec.count = n;
  spec.weights = std::move(weights);
  auto m = LabMembership::Build(spec);
  REQUIRE(m.ok());
  return *m;
}

KeySet Keys(uint64_t n) {
  KeySpec spec;
  spec.count = n;
  auto k = KeySet::Generate(spec);
  REQUIRE(k.ok());
  return std::move(k).value();
}

}  // namespace

TEST_CASE("configurations: defaults are the six algorithms, xxh3, 160 vnodes", "[lab][config]") {
  auto configs = ExpandConfigurations(CompareOptions{});
  REQUIRE(configs.ok());
  std::vector<std::string> labels;
  for (const auto& c : *configs) labels.push_back(c.Label());
  CHECK(labels == std::vector<std::string>{"ring xxh3 v160", "jump xxh3", "maglev xxh3",
                                           "rendezvous xxh3", "ketama md5", "modulo xxh3"});
}

TEST_CASE("configurations: vnodes only multiply the ring, ketama is md5 once", "[lab][config]") {
  CompareOptions o;
  o.algorithms = {Algorithm::kRing, Algorithm::kJump, Algorithm::kKetama, Algorithm::kJump};
  o.hashes = {hash::HashKind::kCrc32, hash::HashKind::kXxh3, hash::HashKind::kCrc32};
  o.vnodes = {1, 100};
  auto configs = ExpandConfigurations(o);
  REQUIRE(configs.ok());
  std::vector<std::string> labels;
  for (const auto& c : *configs) labels.push_back(c.Label());
  CHECK(labels == std::vector<std::string>{"ring crc32 v1", "ring xxh3 v1", "ring crc32 v100",
                                           "ring xxh3 v100", "jump crc32", "jump xxh3",
                                           "ketama md5"});
}

TEST_CASE("configurations: vnodes out of range are an error", "[lab][config]") {
  for (int v : {0, -5, CompareOptions::kMaxVnodes + 1}) {
    CompareOptions o;
    o.vnodes = {100, v};
    auto configs = ExpandConfigurations(o);
    REQUIRE_FALSE(configs.ok());
    CHECK(configs.status().message().find("--vnodes") != std::string::npos);
  }
}

TEST_CASE("measure: shares add up and moves have their ideals", "[lab][measure]") {
  LabMembership m = Members(5);
  KeySet keys = Keys(20000);
  PlacementComparison lab(m, keys, 65537);
  auto configs = ExpandConfigurations(CompareOptions{});
  REQUIRE(configs.ok());
  for (const Configuration& c : *configs) {
    INFO(c.Label());
    auto r = lab.Measure(c);
    REQUIRE(r.ok());
    const auto& shares = r->shares.shares_pct;
    REQUIRE(shares.size() == 5);
    CHECK(std::accumulate(shares.begin(), shares.end(), 0.0) == Approx(100));
    CHECK(r->add.ideal_pct == Approx(100.0 / 6));
    CHECK(r->remove_last.ideal_pct == Approx(20));
    CHECK(r->remove_middle.ideal_pct == Approx(20));
    // Every scheme but modulo is consistent: the added node takes about its share, not more.
    if (c.algorithm != Algorithm::kModulo) CHECK(r->add.moved_pct < 25);
    CHECK(r->memory_bytes < (1u << 20));
    CHECK(r->lookup_ns_per_key() > 0);
    CHECK(std::isnan(r->vnode_adjacency_pct) == (c.algorithm != Algorithm::kRing));
  }
}

TEST_CASE("measure: minimal movement is exact for the ring", "[lab][measure]") {
  // A ring only hands keys to the joining node, so the moved fraction *is* its share, and a
  // removal moves exactly the leaving node's share.
  LabMembership m = Members(10);
  KeySet keys = Keys(50000);
  PlacementComparison lab(m, keys, 65537);
  for (auto h : {hash::HashKind::kXxh3, hash::HashKind::kCrc32, hash::HashKind::kFnv1a32}) {
    auto r = lab.Measure({Algorithm::kRing, h, 50});
    REQUIRE(r.ok());
    CHECK(r->add.moved_pct == Approx(r->added_node_share_pct).margin(1e-9));
    CHECK(r->remove_last.moved_pct == Approx(r->shares.shares_pct[9]).margin(1e-9));
    CHECK(r->remove_middle.moved_pct == Approx(r->shares.shares_pct[5]).margin(1e-9));
  }
}

TEST_CASE("measure: one node has nothing to remove", "[lab][measure]") {
  LabMembership m = Members(1);
  KeySet keys = Keys(2000);
  PlacementComparison lab(m, keys, 65537);
  auto r = lab.Measure({Algorithm::kJump, hash::HashKind::kXxh3, 0});
  REQUIRE(r.ok());
  CHECK(r->shares.shares_pct[0] == 100);
  CHECK(std::isnan(r->remove_last.moved_pct));
  CHECK(std::isnan(r->remove_middle.moved_pct));
  CHECK(r->add.ideal_pct == Approx(50));
  CHECK(r->add.moved_pct == Approx(50).margin(3));
}

TEST_CASE("measure: weights are honoured by the ideals", "[lab][measure]") {
  // Seed 000's weights 4/2/1 x 8: ideals 28.57% / 14.29% / 7.14%.
  LabMembership m = Members(10, {4, 2, 1, 1, 1, 1, 1, 1, 1, 1});
  KeySet keys = Keys(100000);
  PlacementComparison lab(m, keys, 65537);
  for (Algorithm a : {Algorithm::kRing, Algorithm::kJump, Algorithm::kMaglev,
                      Algorithm::kRendezvous, Algorithm::kKetama}) {
    auto r = lab.Measure({a, a == Algorithm::kKetama ? hash::HashKind::kMd5 : hash::HashKind::kXxh3,
                          a == Algorithm::kRing ? 500 : 0});
    REQUIRE(r.ok());
    INFO(AlgorithmName(a) << " max dev " << r->shares.max_dev_pp);
    CHECK(r->shares.ideal_pct[0] == Approx(400.0 / 14));
    CHECK(r->shares.ideal_pct[2] == Approx(100.0 / 14));
    CHECK(r->shares.max_dev_pp < 2.0);
    CHECK(r->remove_last.ideal_pct == Approx(100.0 / 14));
  }
}

TEST_CASE("measure: construction errors name the algorithm", "[lab][measure]") {
  LabMembership m = Members(10);
  KeySet keys = Keys(100);
  PlacementComparison small_table(m, keys, 997);  // prime, but below 100 * 10
  auto maglev = small_table.Measure({Algorithm::kMaglev, hash::HashKind::kXxh3, 0});
  REQUIRE_FALSE(maglev.ok());
  CHECK(maglev.status().message().rfind("maglev: ", 0) == 0);

  LabMembership fractional = Members(2, {1.5, 1});
  PlacementComparison lab(fractional, keys, 65537);
  auto ketama = lab.Measure({Algorithm::kKetama, hash::HashKind::kMd5, 0});
  REQUIRE_FALSE(ketama.ok());
  CHECK(ketama.status().message().rfind("ketama: ", 0) == 0);
}

TEST_CASE("run comparison: reports progress and stops at the first error", "[lab][measure]") {
  LabMembership m = Members(10);
  KeySet keys = Keys(1000);
  CompareOptions o;
  o.algorithms = {Algorithm::kJump, Algorithm::kMaglev, Algorithm::kRing};
  o.maglev_table_size = 997;
  std::vector<std::string> seen;
  auto report = RunComparison(o, m, keys, [&](size_t i, size_t total, const Configuration& c) {
    CHECK(total == 3);
    CHECK(i == seen.size());
    seen.push_back(c.Label());
  });
  REQUIRE_FALSE(report.ok());
  CHECK(seen == std::vector<std::string>{"jump xxh3", "maglev xxh3"});
}

TEST_CASE("configurations: a Maglev table above the maximum is an error", "[lab][config]") {
  CompareOptions o;
  o.maglev_table_size = CompareOptions::kMaxMaglevTable;
  CHECK(ExpandConfigurations(o).ok());
  o.maglev_table_size = CompareOptions::kMaxMaglevTable + 1;
  auto configs = ExpandConfigurations(o);
  REQUIRE_FALSE(configs.ok());
  CHECK(configs.status().message().find("--maglev-table") != std::string::npos);
}

TEST_CASE("compare: a ring over the point budget is refused before it is built", "[lab][config]") {
  MembershipSpec spec;
  spec.count = MembershipSpec::kMaxNodes;
  auto membership = LabMembership::Build(spec);
  REQUIRE(membership.ok());
  KeySet keys = Keys(1000);
  CompareOptions o;
  o.algorithms = {Algorithm::kRing};
  o.vnodes = {100000};  // 201 x 100000 = 2 x 10^7 points: gigabytes, minutes
  auto report = RunComparison(o, *membership, keys, nullptr);
  REQUIRE_FALSE(report.ok());
  CHECK(report.status().code() == Status::Code::kInvalidArgument);
  CHECK(report.status().message().find("exceeds the lab's limit") != std::string::npos);
}
