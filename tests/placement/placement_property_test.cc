// Properties every algorithm is held to, through the common Placement interface.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "placement/test_util.h"
#include "shardkv/placement.h"

using namespace shardkv;
using shardkv::testing::Keys;
using shardkv::testing::Nodes;
using shardkv::testing::OwnerNames;
using shardkv::testing::SharesPct;

namespace {

std::unique_ptr<Placement> Make(Algorithm a, const std::vector<NodeSpec>& nodes,
                                PlacementOptions opts = {}) {
  auto p = MakePlacement(a, nodes, opts);
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return std::move(p).value();
}

const std::vector<Algorithm> kAll = {Algorithm::kRing,   Algorithm::kJump,
                                     Algorithm::kMaglev, Algorithm::kRendezvous,
                                     Algorithm::kKetama, Algorithm::kModulo};

double StddevPct(const std::vector<double>& shares) {
  const double mean = std::accumulate(shares.begin(), shares.end(), 0.0) / shares.size();
  double sq = 0;
  for (double s : shares) sq += (s - mean) * (s - mean);
  return std::sqrt(sq / shares.size());
}

double MaxDevPct(const std::vector<double>& shares, const std::vector<double>& ideal) {
  double d = 0;
  for (size_t i = 0; i < shares.size(); ++i) d = std::max(d, std::abs(shares[i] - ideal[i]));
  return d;
}

}  // namespace

TEST_CASE("placement: deterministic, and replicas distinct for every n", "[property]") {
  auto keys = Keys(2000);
  for (Algorithm a : kAll) {
    auto nodes = Nodes(6);
    auto p1 = Make(a, nodes), p2 = Make(a, nodes);
    CHECK(OwnerNames(*p1, keys) == OwnerNames(*p2, keys));
    std::vector<uint32_t> out;
    for (const auto& k : keys) {
      const uint64_t t = p1->KeyToken(k);
      for (size_t n = 1; n <= nodes.size(); ++n) {
        INFO(AlgorithmName(a) << " n=" << n);
        REQUIRE(p1->Replicas(t, n, &out).ok());
        REQUIRE(out.size() == n);
        REQUIRE(out[0] == p1->Owner(t));
        REQUIRE(std::set<uint32_t>(out.begin(), out.end()).size() == n);
      }
    }
    CHECK(p1->Replicas(1, nodes.size() + 1, &out).IsInvalidArgument());
  }
}

TEST_CASE("placement: owners do not depend on membership order", "[property]") {
  auto keys = Keys(20000);
  // Jump and modulo are positional by design: their bucket i *is* list entry i.
  for (Algorithm a :
       {Algorithm::kRing, Algorithm::kMaglev, Algorithm::kRendezvous, Algorithm::kKetama}) {
    auto nodes = Nodes(7);
    auto shuffled = nodes;
    std::rotate(shuffled.begin(), shuffled.begin() + 3, shuffled.end());
    std::swap(shuffled[0], shuffled[5]);
    INFO(AlgorithmName(a));
    CHECK(OwnerNames(*Make(a, nodes), keys) == OwnerNames(*Make(a, shuffled), keys));
  }
}

TEST_CASE("placement: every algorithm reports membership errors", "[property]") {
  for (Algorithm a : kAll) {
    INFO(AlgorithmName(a));
    CHECK(MakePlacement(a, {}).status().IsInvalidArgument());
    CHECK(MakePlacement(a, {{"", 1}}).status().IsInvalidArgument());
    CHECK(MakePlacement(a, {{"x", 1}, {"x", 1}}).status().IsInvalidArgument());
    CHECK(MakePlacement(a, {{"x", 0}}).status().IsInvalidArgument());
    CHECK(MakePlacement(a, {{"x", -2}}).status().IsInvalidArgument());
  }
  CHECK(ParseAlgorithm("chord").status().IsInvalidArgument());
  for (Algorithm a : kAll) CHECK(*ParseAlgorithm(AlgorithmName(a)) == a);
}

TEST_CASE("placement: minimal movement on add and remove (100k keys)", "[property]") {
  const auto keys = Keys(100000);
  const auto nodes = Nodes(10);
  auto grown = nodes;
  grown.push_back({"cache-10", 1});
  auto shrunk_mid = nodes;
  shrunk_mid.erase(shrunk_mid.begin() + 4);  // cache-04
  auto shrunk_last = nodes;
  shrunk_last.pop_back();  // cache-09

  for (Algorithm a : kAll) {
    auto before = OwnerNames(*Make(a, nodes), keys);
    auto after_add = OwnerNames(*Make(a, grown), keys);
    auto after_mid = OwnerNames(*Make(a, shrunk_mid), keys);
    auto after_last = OwnerNames(*Make(a, shrunk_last), keys);
    int64_t add_moved = 0, add_bad = 0, mid_moved = 0, mid_bad = 0, last_bad = 0;
    for (size_t i = 0; i < keys.size(); ++i) {
      if (before[i] != after_add[i]) {
        ++add_moved;
        add_bad += after_add[i] != "cache-10";  // moved somewhere other than the new node
      }
      if (before[i] != after_mid[i]) {
        ++mid_moved;
        mid_bad += before[i] != "cache-04";  // a key that did not belong to the removed node
      }
      if (before[i] != after_last[i]) last_bad += before[i] != "cache-09";
    }
    INFO(AlgorithmName(a) << ": add moved " << add_moved << " (" << add_bad << " not to new)"
                          << ", remove-middle moved " << mid_moved << " (" << mid_bad
                          << " not from removed)");
    switch (a) {
      case Algorithm::kRing:
      case Algorithm::kRendezvous:
      case Algorithm::kKetama:
        CHECK(add_bad == 0);
        CHECK(mid_bad == 0);
        CHECK(last_bad == 0);
        break;
      case Algorithm::kJump:
        CHECK(add_bad == 0);
        CHECK(last_bad == 0);
        // Renumbering: removing a middle bucket shifts every bucket after it.
        CHECK(mid_bad > 0.3 * keys.size());
        break;
      case Algorithm::kMaglev:
        // Near-minimal, not minimal: report the extra movement between survivors.
        WARN("maglev extra movement: add " << add_bad << " keys (" << 100.0 * add_bad / keys.size()
                                           << "%), remove-middle " << mid_bad << " keys ("
                                           << 100.0 * mid_bad / keys.size() << "%)");
        CHECK(add_bad < 0.03 * keys.size());
        CHECK(mid_bad < 0.03 * keys.size());
        break;
      case Algorithm::kModulo:
        CHECK(add_moved > 0.85 * keys.size());
        break;
    }
  }
}

TEST_CASE("placement: balance bounds on 1M keys, 10 nodes", "[property][balance]") {
  const auto keys = Keys(1000000);
  const std::vector<double> ideal(10, 10.0);
  for (Algorithm a : {Algorithm::kJump, Algorithm::kMaglev}) {
    auto shares = SharesPct(*Make(a, Nodes(10)), keys);
    INFO(AlgorithmName(a) << " max deviation " << MaxDevPct(shares, ideal) << " pp");
    CHECK(MaxDevPct(shares, ideal) < 0.2);
  }
  auto ring = SharesPct(*Make(Algorithm::kRing, Nodes(10)), keys);
  INFO("ring V=160 xxh3 stddev " << StddevPct(ring) << " pp");
  CHECK(StddevPct(ring) < 1.5);
}

TEST_CASE("placement: weights 4/2/1x8 honoured within 1 pp", "[property][balance]") {
  std::vector<NodeSpec> nodes = {{"big", 4}, {"mid", 2}};
  for (int i = 0; i < 8; ++i) nodes.push_back({"small-" + std::to_string(i), 1});
  std::vector<double> ideal = {400.0 / 14, 200.0 / 14};
  for (int i = 0; i < 8; ++i) ideal.push_back(100.0 / 14);
  const auto keys = Keys(1000000);
  PlacementOptions ring_opts;
  ring_opts.vnodes = 500;  // the seeds' setting: vnodes = weight x 500
  for (Algorithm a :
       {Algorithm::kRing, Algorithm::kJump, Algorithm::kMaglev, Algorithm::kRendezvous}) {
    auto shares = SharesPct(*Make(a, nodes, ring_opts), keys);
    INFO(AlgorithmName(a) << " max error " << MaxDevPct(shares, ideal) << " pp");
    CHECK(MaxDevPct(shares, ideal) < 1.0);
  }
  // Ketama's point count is fixed by libmemcached (160 per server at the mean weight, so 112
  // points for a weight-1 server here): its statistical error is larger, and we must match the
  // library rather than improve on it. Weights are still honoured, only more coarsely.
  auto ketama = SharesPct(*Make(Algorithm::kKetama, nodes), keys);
  INFO("ketama max error " << MaxDevPct(ketama, ideal) << " pp");
  CHECK(MaxDevPct(ketama, ideal) < 2.5);
}
