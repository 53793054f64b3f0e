// Ketama tests. The oracle is Debian's libmemcached 1.1.4 itself: memcached_generate_hash() is a
// pure function of the server list and the key (no connection is made), so every server list
// below is built twice, once here and once in libmemcached, and the two must agree on every key.
#include "shardkv/ketama.h"

#include <libmemcached/memcached.h>

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace shardkv {
namespace {

struct Server {
  std::string name;  // what Ketama::Build parses
  std::string host;  // what libmemcached is given, independently of our parser
  in_port_t port;
  uint32_t weight;
};

std::vector<NodeSpec> Specs(const std::vector<Server>& servers) {
  std::vector<NodeSpec> specs;
  for (const Server& s : servers) specs.push_back({s.name, static_cast<double>(s.weight)});
  return specs;
}

std::unique_ptr<Ketama> MustBuild(std::vector<NodeSpec> nodes) {
  auto built = Ketama::Build(std::move(nodes));
  INFO(built.status().ToString());
  REQUIRE(built.ok());
  return std::move(built).value();
}

using MemcPtr = std::unique_ptr<memcached_st, decltype(&memcached_free)>;

// KETAMA_WEIGHTED=1 alone is the complete setting in 1.1.4: it switches the key hash and the
// distribution hash to MD5, sets the distribution to CONSISTENT_WEIGHTED and turns weighting on.
// It must come before the servers are added: a later DISTRIBUTION=CONSISTENT_KETAMA would turn
// weighting back off.
MemcPtr WeightedKetamaOracle(const std::vector<Server>& servers) {
  MemcPtr memc(memcached_create(nullptr), &memcached_free);
  REQUIRE(memc != nullptr);
  REQUIRE(memcached_behavior_set(memc.get(), MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1) ==
          MEMCACHED_SUCCESS);
  for (const Server& s : servers) {
    REQUIRE(memcached_server_add_with_weight(memc.get(), s.host.c_str(), s.port, s.weight) ==
            MEMCACHED_SUCCESS);
  }
  REQUIRE(memcached_server_count(memc.get()) == servers.size());
  REQUIRE(memcached_behavior_get(memc.get(), MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED) == 1);
  REQUIRE(memcached_behavior_get(memc.get(), MEMCACHED_BEHAVIOR_DISTRIBUTION) ==
          MEMCACHED_DISTRIBUTION_CONSISTENT_WEIGHTED);
  REQUIRE(memcached_behavior_get(memc.get(), MEMCACHED_BEHAVIOR_HASH) == MEMCACHED_HASH_MD5);
  return memc;
}

// 100,000 keys: mostly "key:<i>", plus every 8th one random bytes (NULs included) of length
// 0..40, so the oracle also sees empty and binary keys.
std::vector<std::string> TestKeys() {
  std::vector<std::string> keys;
  std::mt19937_64 rng(20240611);
  for (int i = 0; i < 100000; ++i) {
    if (i % 8 == 7) {
      std::string k(rng() % 41, '\0');
      for (char& c : k) c = static_cast<char>(rng());
      keys.push_back(std::move(k));
    } else {
      keys.push_back("key:" + std::to_string(i));
    }
  }
  return keys;
}

// Number of keys on which Ketama and libmemcached disagree.
size_t Mismatches(const std::vector<Server>& servers, const std::vector<std::string>& keys) {
  auto ketama = MustBuild(Specs(servers));
  MemcPtr memc = WeightedKetamaOracle(servers);
  size_t mismatches = 0;
  for (const std::string& key : keys) {
    uint32_t want = memcached_generate_hash(memc.get(), key.data(), key.size());
    if (ketama->Owner(ketama->KeyToken(key)) != want) ++mismatches;
  }
  return mismatches;
}

const std::vector<Server> kThreeMixed = {
    {"10.0.0.1", "10.0.0.1", 11211, 1},
    {"10.0.0.2:11212", "10.0.0.2", 11212, 2},
    {"10.0.0.3:11211", "10.0.0.3", 11211, 5},
};

const std::vector<Server> kHostnames = {
    {"cache-a.example.com:11211", "cache-a.example.com", 11211, 3},
    {"cache-b.example.com:22122", "cache-b.example.com", 22122, 1},
    {"cache-c.example.com", "cache-c.example.com", 11211, 2},
    {"127.0.0.1:11311", "127.0.0.1", 11311, 5},
};

// Weights where float32 rounding costs the weight-240 server one digest: 240/896 * 40 * 7 is
// exactly 75, but float32 computes 74.99999 (296 points, not 300). Plus bracketed IPv6 names on
// both kinds of port, and the extreme ports.
const std::vector<Server> kFloatEdgeIpv6 = {
    {"10.2.0.1", "10.2.0.1", 11211, 80},         {"[::1]:11211", "::1", 11211, 188},
    {"10.2.0.3:11300", "10.2.0.3", 11300, 74},   {"[fe80::1]:11300", "fe80::1", 11300, 130},
    {"[2001:db8::7]", "2001:db8::7", 11211, 71}, {"10.2.0.6:1", "10.2.0.6", 1, 240},
    {"10.2.0.7:65535", "10.2.0.7", 65535, 113},
};

std::vector<Server> TenServers() {
  std::vector<Server> servers;
  const uint32_t weights[] = {1, 2, 5};
  for (uint32_t i = 0; i < 10; ++i) {
    std::string host = "10.1.0." + std::to_string(i + 1);
    auto port = static_cast<in_port_t>(i % 2 == 0 ? 11211 : 11212 + i);
    std::string name = port == 11211 && i % 4 == 0 ? host : host + ":" + std::to_string(port);
    servers.push_back({name, host, port, weights[i % 3]});
  }
  return servers;
}

// 9 x weight 1, 5 x weight 2, 1 x weight 5: exact arithmetic gives the weight-5 server
// 5/24 * 40 * 15 = 125 digests (500 points); libmemcached's float32 gives 124 (496). (The ten
// server list rounds too: each weight-1 server gets 60 points where 1/25 * 40 * 10 says 64.)
std::vector<Server> FifteenServers() {
  std::vector<Server> servers;
  for (uint32_t i = 0; i < 15; ++i) {
    std::string host = "node" + std::to_string(i) + ".cache";
    uint32_t weight = i < 9 ? 1 : i < 14 ? 2 : 5;
    auto port = static_cast<in_port_t>(i % 3 == 0 ? 11211 : 12000 + i);
    servers.push_back({host + ":" + std::to_string(port), host, port, weight});
  }
  return servers;
}

TEST_CASE("Ketama agrees with libmemcached 1.1.4 weighted ketama on 100k keys", "[ketama]") {
  static const std::vector<std::string> keys = TestKeys();
  std::vector<Server> all_one;
  for (int i = 0; i < 5; ++i) {
    std::string host = "192.168.7." + std::to_string(i);
    all_one.push_back({host, host, 11211, 1});
  }
  SECTION("3 servers, weights 1/2/5, ports 11211 and 11212") {
    REQUIRE(Mismatches(kThreeMixed, keys) == 0);
  }
  SECTION("4 hostnames, weights 3/1/2/5") { REQUIRE(Mismatches(kHostnames, keys) == 0); }
  SECTION("7 servers, float32 edge weights, IPv6") {
    REQUIRE(Mismatches(kFloatEdgeIpv6, keys) == 0);
  }
  SECTION("10 servers, weights 1/2/5, mixed ports") {
    REQUIRE(Mismatches(TenServers(), keys) == 0);
  }
  SECTION("15 servers, float32 edge") { REQUIRE(Mismatches(FifteenServers(), keys) == 0); }
  SECTION("5 servers, all weight 1") { REQUIRE(Mismatches(all_one, keys) == 0); }
  SECTION("2 servers where the light one rounds to zero points") {
    REQUIRE(Mismatches({{"10.3.0.1", "10.3.0.1", 11211, 1}, {"10.3.0.2", "10.3.0.2", 11211, 1000}},
                       keys) == 0);
  }
  SECTION("1 server") { REQUIRE(Mismatches({{"solo:4000", "solo", 4000, 7}}, keys) == 0); }
}

TEST_CASE("Without KETAMA_WEIGHTED libmemcached disagrees (the oracle has teeth)", "[ketama]") {
  // DISTRIBUTION=CONSISTENT_KETAMA alone keeps the default key hash (one-at-a-time) and, with all
  // weights 1, the unweighted 100-point continuum: a different placement.
  MemcPtr memc(memcached_create(nullptr), &memcached_free);
  REQUIRE(memcached_behavior_set(memc.get(), MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                 MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA) == MEMCACHED_SUCCESS);
  std::vector<NodeSpec> specs;
  for (int i = 0; i < 4; ++i) {
    std::string host = "10.4.0." + std::to_string(i);
    REQUIRE(memcached_server_add_with_weight(memc.get(), host.c_str(), 11211, 1) ==
            MEMCACHED_SUCCESS);
    specs.push_back({host, 1});
  }
  REQUIRE(memcached_behavior_get(memc.get(), MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED) == 0);
  auto ketama = MustBuild(specs);
  size_t mismatches = 0;
  for (int i = 0; i < 10000; ++i) {
    std::string key = "key:" + std::to_string(i);
    if (ketama->OwnerOfKey(key) != memcached_generate_hash(memc.get(), key.data(), key.size())) {
      ++mismatches;
    }
  }
  CHECK(mismatches > 5000);  // about 3/4 of keys for 4 servers
}

TEST_CASE("Ketama::KeyToken is MD5's first 4 bytes, little-endian", "[ketama]") {
  auto ketama = MustBuild({{"a", 1}});
  // MD5("") = d41d8cd98f00b204e9800998ecf8427e.
  CHECK(ketama->KeyToken("") == 0xd98c1dd4U);
  for (int i = 0; i < 1000; ++i) {
    std::string key = "token:" + std::to_string(i);
    uint64_t token = ketama->KeyToken(key);
    CHECK(token >> 32 == 0);
    CHECK(token == memcached_generate_hash_value(key.data(), key.size(), MEMCACHED_HASH_MD5));
  }
}

TEST_CASE("Ketama point counts follow libmemcached's float32 formula", "[ketama]") {
  CHECK(MustBuild({{"10.0.0.1:11211", 1}})->point_count() == 160);
  // 1/8*160/4*3 = 15 -> 60; 2/8 -> 30 -> 120; 5/8 -> 75 -> 300.
  CHECK(MustBuild(Specs(kThreeMixed))->point_count() == 480);
  // 100 + 232 + 92 + 160 + 88 + 296 + 140; exact arithmetic gives the weight-240 server 300.
  CHECK(MustBuild(Specs(kFloatEdgeIpv6))->point_count() == 1108);
  // Exact arithmetic would give 9*100 + 5*200 + 500 = 2400.
  CHECK(MustBuild(Specs(FifteenServers()))->point_count() == 2396);
  // 1/1001*80 rounds to zero digests; 1000/1001*80 = 79.92 -> 79 digests.
  CHECK(MustBuild({{"a", 1}, {"b", 1000}})->point_count() == 316);
}

TEST_CASE("Ketama names: default port, brackets and equivalent spellings", "[ketama]") {
  auto check_same = [](const std::string& a, const std::string& b) {
    auto x = MustBuild({{a, 1}, {"other:2000", 2}});
    auto y = MustBuild({{b, 1}, {"other:2000", 2}});
    for (uint32_t t = 0; t < 4000; ++t) {
      uint64_t token = static_cast<uint64_t>(t) * 1073741ULL;
      REQUIRE(x->Owner(token) == y->Owner(token));
    }
  };
  check_same("10.0.0.1", "10.0.0.1:11211");
  check_same("[::1]", "[::1]:11211");
  check_same("[cache]:4000", "cache:4000");
  check_same("h:01234", "h:1234");  // the port is a number: "%u" prints it without the zero
  CHECK(MustBuild({{std::string(1024, 'h'), 1}})->point_count() == 160);
}

TEST_CASE("Ketama::Build rejects bad membership", "[ketama]") {
  auto rejects = [](std::vector<NodeSpec> nodes, const std::string& needle) {
    auto built = Ketama::Build(std::move(nodes));
    INFO("expected an error mentioning '" << needle << "'");
    REQUIRE_FALSE(built.ok());
    CHECK(built.status().IsInvalidArgument());
    INFO(built.status().message());
    CHECK(built.status().message().find(needle) != std::string::npos);
  };
  SECTION("membership") {
    rejects({}, "empty");
    rejects({{"", 1}}, "empty");
    rejects({{"a", 1}, {"a", 2}}, "duplicate");
    rejects({{"a", 1}, {"a:11211", 1}}, "same server");
    rejects({{"[::1]", 1}, {"[::1]:11211", 1}}, "same server");
  }
  SECTION("weights") {
    rejects({{"a", 0}}, "weight");
    rejects({{"a", -2}}, "weight");
    rejects({{"a", std::nan("")}}, "weight");
    rejects({{"a", std::numeric_limits<double>::infinity()}}, "weight");
    rejects({{"a", 0.5}}, "whole numbers");
    rejects({{"a", 1}, {"b", 1.5}}, "whole numbers");
    rejects({{"a", 4294967296.0}}, "whole numbers");
    CHECK(Ketama::Build({{"a", 4294967295.0}, {"b", 1}}).ok());
  }
  SECTION("ports") {
    for (const char* name : {"h:", "h:0", "h:65536", "h:99999", "h:123456", "h:abc", "h:-1",
                             "h:+80", "h:80 ", "[::1]:", "[::1]:0", "[::1]:70000"}) {
      rejects({{name, 1}}, "port");
    }
  }
  SECTION("hosts") {
    rejects({{":11211", 1}}, "host is empty");
    rejects({{"[]:11211", 1}}, "host is empty");
    rejects({{"[::1", 1}}, "unterminated");
    rejects({{"[::1]x", 1}}, "after ']'");
    rejects({{"::1:11211", 1}}, "IPv6");
    rejects({{"fe80::1", 1}}, "IPv6");
    rejects({{"/var/run/memcached.sock", 1}}, "unix");
    rejects({{std::string(1025, 'h'), 1}}, "1024");
    rejects({{std::string("a\0b", 3), 1}}, "NUL");
  }
}

TEST_CASE("Ketama::Replicas gives n distinct servers, owner first", "[ketama]") {
  for (const auto& servers : {kThreeMixed, kHostnames, TenServers(), FifteenServers()}) {
    auto ketama = MustBuild(Specs(servers));
    const size_t n_max = servers.size();
    std::vector<uint32_t> out;
    std::vector<uint32_t> longest;
    for (uint32_t t = 0; t < 2000; ++t) {
      uint64_t token = static_cast<uint64_t>(t) * 2147483ULL;
      REQUIRE(ketama->Replicas(token, n_max, &longest).ok());
      for (size_t n = 1; n <= n_max; ++n) {
        REQUIRE(ketama->Replicas(token, n, &out).ok());
        REQUIRE(out.size() == n);
        REQUIRE(out[0] == ketama->Owner(token));
        REQUIRE(std::set<uint32_t>(out.begin(), out.end()).size() == n);
        REQUIRE(*std::max_element(out.begin(), out.end()) < n_max);
        // A replica set grows by appending: asking for more never reshuffles the first ones.
        REQUIRE(std::equal(out.begin(), out.end(), longest.begin()));
      }
    }
  }
}

TEST_CASE("Ketama::Replicas: the clockwise walk and zero-point servers", "[ketama]") {
  // The second replica is the first server after the owner's point that is not the owner.
  auto ketama = MustBuild(Specs(kThreeMixed));
  std::vector<uint32_t> out;
  for (uint32_t t = 0; t < 500; ++t) {
    uint32_t token = t * 8589931U;
    REQUIRE(ketama->Replicas(token, 2, &out).ok());
    uint32_t owner = ketama->Owner(token);
    // Step forward through tokens until the owner changes: that is the next server clockwise.
    uint64_t probe = token;
    uint32_t next = owner;
    while (next == owner) {
      probe += 4096;
      next = ketama->Owner(probe > 0xffffffffULL ? probe - 0x100000000ULL : probe);
    }
    REQUIRE(out[1] == next);
  }

  // Weight 1 against 1000 leaves "light" with no points: it never owns a key but still shows
  // up, last, when every server is asked for.
  auto skewed = MustBuild({{"light", 1}, {"heavy", 1000}, {"mid", 500}});
  for (uint32_t t = 0; t < 1000; ++t) {
    uint64_t token = static_cast<uint64_t>(t) * 4294967ULL;
    REQUIRE(skewed->Owner(token) != 0);
    REQUIRE(skewed->Replicas(token, 3, &out).ok());
    REQUIRE(out.size() == 3);
    REQUIRE(out[2] == 0);
  }
}

TEST_CASE("Ketama::Replicas rejects n = 0 and n > N", "[ketama]") {
  auto ketama = MustBuild(Specs(kHostnames));
  std::vector<uint32_t> out;
  CHECK(ketama->Replicas(1, 0, &out).IsInvalidArgument());
  CHECK(ketama->Replicas(1, kHostnames.size() + 1, &out).IsInvalidArgument());
  CHECK(ketama->Replicas(1, 1000, &out).IsInvalidArgument());
  CHECK(ketama->Replicas(1, kHostnames.size(), &out).ok());
}

TEST_CASE("Ketama is deterministic and wraps past the last point", "[ketama]") {
  auto a = MustBuild(Specs(TenServers()));
  auto b = MustBuild(Specs(TenServers()));
  REQUIRE(a->point_count() == b->point_count());
  CHECK(a->algorithm() == "ketama");
  CHECK(a->node_count() == 10);
  CHECK(a->MemoryBytes() >= a->point_count() * 2 * sizeof(uint32_t));
  for (int i = 0; i < 20000; ++i) {
    std::string key = "det:" + std::to_string(i);
    REQUIRE(a->KeyToken(key) == b->KeyToken(key));
    REQUIRE(a->OwnerOfKey(key) == b->OwnerOfKey(key));
  }
  // The first point >= 0 is the first point, which is also where every token past the last
  // point wraps to, including tokens above 32 bits.
  CHECK(a->Owner(0xffffffffULL) == a->Owner(0));
  CHECK(a->Owner(0x100000000ULL) == a->Owner(0));
  CHECK(a->Owner(std::numeric_limits<uint64_t>::max()) == a->Owner(0));
}

TEST_CASE("Ketama breaks point collisions by server index, as libmemcached does", "[ketama]") {
  // MD5("10.9.0.7-38") bytes 12..15 and MD5("10.9.1.106-2") bytes 8..11 are both 3390125743
  // (little-endian): the two servers share a point. Found by brute force over 10.9.x.y.
  const uint32_t kTie = 3390125743U;
  const std::string a = "10.9.0.7";
  const std::string b = "10.9.1.106";
  auto le32 = [](const std::array<uint8_t, 16>& d, int i) {
    return static_cast<uint32_t>(d[4 * i]) | static_cast<uint32_t>(d[4 * i + 1]) << 8 |
           static_cast<uint32_t>(d[4 * i + 2]) << 16 | static_cast<uint32_t>(d[4 * i + 3]) << 24;
  };
  REQUIRE(le32(hash::Md5(a + "-38"), 3) == kTie);
  REQUIRE(le32(hash::Md5(b + "-2"), 2) == kTie);
  // The point just below the tie, so that keys in (below, kTie] land on the tied point.
  uint32_t below = 0;
  std::string below_host;
  for (const std::string& host : {a, b}) {
    for (int i = 0; i < 40; ++i) {
      auto d = hash::Md5(host + "-" + std::to_string(i));
      for (int j = 0; j < 4; ++j) {
        if (le32(d, j) < kTie && le32(d, j) >= below) {
          below = le32(d, j);
          below_host = host;
        }
      }
    }
  }
  for (const auto& order : {std::vector<std::string>{a, b}, std::vector<std::string>{b, a}}) {
    std::vector<Server> servers = {{order[0], order[0], 11211, 1}, {order[1], order[1], 11211, 1}};
    auto ketama = MustBuild(Specs(servers));
    MemcPtr memc = WeightedKetamaOracle(servers);
    // Exact hits and the tokens either side of a point: a token equal to a point belongs to it.
    CHECK(ketama->Owner(kTie) == 0);
    CHECK(ketama->Owner(kTie - 1) == 0);
    CHECK(ketama->Owner(below + 1) == 0);
    CHECK(ketama->Owner(below) == (below_host == order[0] ? 0U : 1U));
    int landed = 0;
    for (int i = 0; landed < 20 && i < 1000000; ++i) {
      std::string key = "tie:" + std::to_string(i);
      uint64_t token = ketama->KeyToken(key);
      if (token <= below || token > kTie) continue;
      ++landed;
      REQUIRE(ketama->Owner(token) == 0);
      REQUIRE(memcached_generate_hash(memc.get(), key.data(), key.size()) == 0);
    }
    REQUIRE(landed == 20);
  }
}

}  // namespace
}  // namespace shardkv
