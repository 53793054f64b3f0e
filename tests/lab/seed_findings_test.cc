// The placement lab must reproduce the seed articles' findings (design.md "The placement lab",
// reference.md "What the seeds measured"). Inputs are the seeds': nodes cache-00..cache-09,
// keys user:0..K-1, vnode strings "name#i".
//
// Two kinds of checks:
//  - golden: with the seeds' exact inputs (1M keys) the raw crc32 ring and Jump over FNV-1a-64
//    reproduce seed 000's tables to the article's 2 decimals, which shows the lab measures
//    exactly what the seed measured;
//  - qualitative, on 200k keys: the findings with margins taken from measured data (the values
//    are noted beside each assertion). Inputs are fixed, so results are deterministic; margins
//    guard against an implementation change silently changing a conclusion.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "placement_lab/comparison.h"

using namespace shardkv;
using namespace shardkv::lab;
using hash::HashKind;

namespace {

constexpr uint64_t kScaledKeys = 200000;

LabMembership SeedNodes(const std::string& pattern = "cache-%02d") {
  MembershipSpec spec;
  spec.names = pattern;
  spec.count = 10;
  auto m = LabMembership::Build(spec);
  REQUIRE(m.ok());
  return *m;
}

const KeySet& SeedKeys(uint64_t count) {
  // Generated once per size: the golden cases share the million keys.
  static std::vector<std::pair<uint64_t, KeySet>> cache;
  for (const auto& [n, keys] : cache) {
    if (n == count) return keys;
  }
  KeySpec spec;
  spec.count = count;
  auto keys = KeySet::Generate(spec);
  REQUIRE(keys.ok());
  cache.emplace_back(count, std::move(keys).value());
  return cache.back().second;
}

ConfigResult Measure(const LabMembership& m, uint64_t keys, Algorithm a, HashKind h,
                     int vnodes = 0) {
  PlacementComparison lab(m, SeedKeys(keys), 65537);
  auto r = lab.Measure({a, h, vnodes});
  REQUIRE(r.ok());
  return *r;
}

// Seed 001's share stddev for random positions, sqrt((N-1)/(N*V)) relative, in pp of N nodes.
double RandomStddevPp(int n, int vnodes) {
  return 100.0 / n * std::sqrt((n - 1.0) / (n * static_cast<double>(vnodes)));
}

// The article prints two decimals; allow exactly the rounding.
Approx Printed(double v) { return Approx(v).margin(0.0051); }

}  // namespace

TEST_CASE("golden: seed 000's raw crc32 ring table, 1M keys", "[lab][seed][golden]") {
  LabMembership nodes = SeedNodes();
  struct Row {
    int vnodes;
    double min, max, dev, sd;
  };
  // Seed 000, section 2 ("环 vnodes=..."): min share, max share, max deviation, stddev.
  for (Row row : {Row{1, 0.09, 96.51, 86.51, 28.84}, Row{10, 1.41, 49.22, 39.22, 15.85},
                  Row{50, 5.77, 12.24, 4.23, 1.69}, Row{100, 6.72, 12.80, 3.28, 1.94},
                  Row{500, 8.06, 12.66, 2.66, 1.47}}) {
    INFO("vnodes " << row.vnodes);
    ConfigResult r = Measure(nodes, 1000000, Algorithm::kRing, HashKind::kCrc32, row.vnodes);
    CHECK(r.shares.min_share_pct == Printed(row.min));
    CHECK(r.shares.max_share_pct == Printed(row.max));
    CHECK(r.shares.max_dev_pp == Printed(row.dev));
    CHECK(r.shares.stddev_pp == Printed(row.sd));
    if (row.vnodes == 100) {
      // Section 3: 10 -> 11 moves 7.05%; removing a middle node moves 12.80%, the share of
      // cache-05, the fullest node.
      CHECK(r.add.moved_pct == Printed(7.05));
      CHECK(r.remove_middle.moved_pct == Printed(12.80));
    }
  }
  // Section 1: fnv1a-32 at vnodes=100 gives 6.31 pp.
  ConfigResult fnv = Measure(nodes, 1000000, Algorithm::kRing, HashKind::kFnv1a32, 100);
  CHECK(fnv.shares.max_dev_pp == Printed(6.31));
}

TEST_CASE("golden: seed 000's Jump (keys through FNV-1a-64), 1M keys", "[lab][seed][golden]") {
  ConfigResult r = Measure(SeedNodes(), 1000000, Algorithm::kJump, HashKind::kFnv1a64);
  CHECK(r.shares.min_share_pct == Printed(9.95));
  CHECK(r.shares.max_share_pct == Printed(10.05));
  CHECK(r.shares.max_dev_pp == Printed(0.05));
  CHECK(r.shares.stddev_pp == Printed(0.03));
  CHECK(r.add.moved_pct == Printed(9.03));
  CHECK(r.remove_last.moved_pct == Printed(10.04));
  CHECK(r.remove_middle.moved_pct == Printed(48.91));
}

TEST_CASE("finding: mod-N moves about 1 - 1/(N+1) of the keys", "[lab][seed]") {
  for (HashKind h : {HashKind::kXxh3, HashKind::kCrc32}) {
    ConfigResult r = Measure(SeedNodes(), kScaledKeys, Algorithm::kModulo, h);
    INFO(hash::HashKindName(h));
    // 1 - 1/11 = 90.9%; measured 90.93 (xxh3) and 90.90 (crc32). Seed 004: 90.8%.
    CHECK(r.add.moved_pct > 85);
    CHECK(r.add.moved_pct < 95);
    // Removing any node renumbers the rest: about 1 - 1/10 (measured 90.02). Seed 004: 89.8%.
    CHECK(r.remove_last.moved_pct > 85);
    CHECK(r.remove_last.moved_pct < 95);
  }
}

TEST_CASE("finding: a ring moves the new node's share, whatever the ideal", "[lab][seed]") {
  for (HashKind h :
       {HashKind::kCrc32, HashKind::kCrc32Fmix32, HashKind::kXxh3, HashKind::kFnv1a32}) {
    for (int v : {10, 100, 500}) {
      ConfigResult r = Measure(SeedNodes(), kScaledKeys, Algorithm::kRing, h, v);
      INFO(r.config.Label() << ": moved " << r.add.moved_pct << "%, new node's share "
                            << r.added_node_share_pct << "%");
      CHECK(std::abs(r.add.moved_pct - r.added_node_share_pct) < 1.0);
      // And a removal moves the removed node's share (seed: 12.80% = cache-05's share).
      CHECK(std::abs(r.remove_middle.moved_pct - r.shares.shares_pct[5]) < 1.0);
    }
  }
  // The seed's case: raw crc32, V=100 gives the new node 7.07%, well below the ideal 9.09%.
  ConfigResult crc = Measure(SeedNodes(), kScaledKeys, Algorithm::kRing, HashKind::kCrc32, 100);
  CHECK(crc.add.moved_pct < crc.add.ideal_pct - 1.5);
}

TEST_CASE("finding: Jump's remove-middle renumbers about half the keys", "[lab][seed]") {
  for (HashKind h : {HashKind::kXxh3, HashKind::kCrc32, HashKind::kFnv1a64}) {
    ConfigResult r = Measure(SeedNodes(), kScaledKeys, Algorithm::kJump, h);
    INFO(hash::HashKindName(h));
    // Removing bucket 5 of 10 moves (10 - 5) / 10 = 50%; measured 48.82-48.90%.
    CHECK(r.remove_middle.moved_pct > 35);
    CHECK(r.remove_middle.moved_pct < 65);
    // ...while adding or removing at the end is near the ideal (9.09%, 10%).
    CHECK(r.add.moved_pct == Approx(r.add.ideal_pct).margin(0.5));
    CHECK(r.remove_last.moved_pct == Approx(r.remove_last.ideal_pct).margin(0.5));
  }
}

TEST_CASE(
    "finding: a raw crc32 ring does not improve from 100 to 500 vnodes on the seeds' "
    "names, crc32-fmix32 does",
    "[lab][seed]") {
  LabMembership nodes = SeedNodes();
  auto dev = [&](HashKind h, int v) {
    return Measure(nodes, kScaledKeys, Algorithm::kRing, h, v).shares;
  };
  ShareStats crc100 = dev(HashKind::kCrc32, 100), crc500 = dev(HashKind::kCrc32, 500);
  // Measured 3.25 -> 2.74 pp (0.84x; 1M keys: 3.28 -> 2.66, 0.81x), where 1/sqrt(V) predicts
  // 0.45x. The seed's "not better than 0.8x" holds by a hair at 1M keys; 0.75 keeps a margin
  // and is still far above the law.
  CHECK(crc500.max_dev_pp > 0.75 * crc100.max_dev_pp);
  // And it sits far above the random-positions stddev (0.42 pp at V=500): measured 1.47 pp.
  CHECK(crc500.stddev_pp > 2.5 * RandomStddevPp(10, 500));

  ShareStats fmix100 = dev(HashKind::kCrc32Fmix32, 100);
  ShareStats fmix500 = dev(HashKind::kCrc32Fmix32, 500);
  // Measured 2.18 -> 0.77 pp (0.35x); stddev 0.46 pp at V=500, the seed's 0.30-0.45.
  CHECK(fmix500.max_dev_pp < 0.6 * fmix100.max_dev_pp);
  CHECK(fmix500.stddev_pp < 1.3 * RandomStddevPp(10, 500));
}

TEST_CASE("finding: xxh3 and crc32-fmix32 follow 1/sqrt(V) (mean over name salts)", "[lab][seed]") {
  // One name set is one random draw of ten shares: its max deviation alone is noisy (+-30%).
  // xxh3 on the seeds' exact names draws high at V=500 (1.48 -> 1.19 pp, 0.78x), so the law is
  // checked the way the seed checked crc32: over salted names (the seed salted the vnode key),
  // on the mean stddev, against seed 001's sqrt((N-1)/(N*V)).
  const std::vector<std::string> salts = {"cache-%02d",   "cache-%02d#a", "cache-%02d#b",
                                          "cache-%02d#c", "a#cache-%02d", "b#cache-%02d",
                                          "cache-%02d:1", "cache-%02d:2"};
  for (HashKind h : {HashKind::kXxh3, HashKind::kCrc32Fmix32}) {
    double sd100 = 0, sd500 = 0;
    for (const std::string& salt : salts) {
      LabMembership nodes = SeedNodes(salt);
      sd100 += Measure(nodes, kScaledKeys, Algorithm::kRing, h, 100).shares.stddev_pp;
      sd500 += Measure(nodes, kScaledKeys, Algorithm::kRing, h, 500).shares.stddev_pp;
    }
    sd100 /= salts.size();
    sd500 /= salts.size();
    INFO(hash::HashKindName(h) << ": mean stddev " << sd100 << " pp at V=100, " << sd500
                               << " pp at V=500");
    // Measured: xxh3 0.83 / 0.48 (law 0.95 / 0.42), crc32-fmix32 0.82 / 0.42. The mean of 8
    // draws is within about 10% of the law by chance alone.
    CHECK(sd100 == Approx(RandomStddevPp(10, 100)).epsilon(0.35));
    CHECK(sd500 == Approx(RandomStddevPp(10, 500)).epsilon(0.35));
    // 1/sqrt(5) = 0.45; measured 0.58 and 0.51.
    CHECK(sd500 < 0.65 * sd100);
  }
}

TEST_CASE("finding: fnv1a clusters a node's vnodes on the ring", "[lab][seed]") {
  LabMembership nodes = SeedNodes();
  ConfigResult fnv = Measure(nodes, kScaledKeys, Algorithm::kRing, HashKind::kFnv1a32, 100);
  ConfigResult xxh = Measure(nodes, kScaledKeys, Algorithm::kRing, HashKind::kXxh3, 100);
  // Shares: 6.25 pp against xxh3's 1.54 pp (the seed: 6.31 pp at 1M keys).
  CHECK(fnv.shares.max_dev_pp > 2.5 * xxh.shares.max_dev_pp);
  // The cause, measured directly: "cache-03#17" and "cache-03#18" differ in the last bytes,
  // which FNV-1a's final multiply barely spreads, so a node's points land next to each other.
  // 44% of points are followed by their own node's, against ~10% (1/N) for random positions.
  CHECK(fnv.vnode_adjacency_pct > 30);
  CHECK(xxh.vnode_adjacency_pct == Approx(10).margin(3));
}

TEST_CASE("finding: weights 4/2/1x8 land on the weighted ideal", "[lab][seed]") {
  MembershipSpec spec;
  spec.count = 10;
  spec.weights = {4, 2, 1, 1, 1, 1, 1, 1, 1, 1};
  auto nodes = LabMembership::Build(spec);
  REQUIRE(nodes.ok());
  // Seed 000: ring (vnodes = weight x 500) 0.76 pp, jump and maglev (repeated registration)
  // 0.05 pp. Measured at 200k keys: ring xxh3 1.15, jump 0.10, maglev 0.09.
  CHECK(Measure(*nodes, kScaledKeys, Algorithm::kRing, HashKind::kXxh3, 500).shares.max_dev_pp <
        1.5);
  CHECK(Measure(*nodes, kScaledKeys, Algorithm::kJump, HashKind::kXxh3).shares.max_dev_pp < 0.3);
  CHECK(Measure(*nodes, kScaledKeys, Algorithm::kMaglev, HashKind::kXxh3).shares.max_dev_pp < 0.3);
  // Golden: the seed's ring hashed with fmix32(crc32) (its hashKey), 1M keys: 0.76 pp.
  CHECK(Measure(*nodes, 1000000, Algorithm::kRing, HashKind::kCrc32Fmix32, 500).shares.max_dev_pp ==
        Printed(0.76));
}
