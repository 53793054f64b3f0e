// Values at the documented CLI limit (16 MiB) through a local 3-node cluster at the default
// timeout: every put succeeds and reads back whole, and the nodes give the memory back.
//
// Before: a 16 MiB put had 1.25 s per attempt (a quarter of the 5 s budget) and replica copies
// 1 s, so puts failed ("timed out after 1245 ms (after 4 attempts)") while the value was stored;
// node RSS went from 30 MB to 0.6-1 GB after about fifteen such puts and stayed there.
//
// "Well within the default timeout": the median put (the CLI process, start to exit) must take
// under half of the default 5 s budget. A median, not the slowest put, because these machines are
// shared: under a load of 7 single puts took up to 3 s, an idle machine 0.3-1.4 s.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;

constexpr size_t kValueBytes = size_t{16} << 20;
constexpr int kPuts = 15;
// What a node may keep after a burst of large values: RocksDB's own bounds (two 64 MiB write
// buffers of the data column family and the 64 MiB block cache) and some slack. The leak this
// guards against kept 500 MB and more.
constexpr long kRssBoundKiB = 256 * 1024;
constexpr auto kMedianPutBound = std::chrono::milliseconds(2500);  // half the CLI's default

std::string RandomValue(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string value(kValueBytes, '\0');
  for (size_t i = 0; i + 8 <= value.size(); i += 8) {
    const uint64_t word = rng();
    value.replace(i, 8, reinterpret_cast<const char*>(&word), 8);
  }
  return value;
}

// VmRSS of `pid` in KiB, or -1 if it cannot be read.
long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string word;
  while (in >> word) {
    if (word == "VmRSS:") {
      long kib = -1;
      in >> kib;
      return kib;
    }
  }
  return -1;
}

}  // namespace

TEST_CASE("large values: 16 MiB puts succeed at the default timeout and memory comes back",
          "[multiprocess][limits]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0"}).exit_code == 0);
  const std::string value = RandomValue(26);
  std::vector<std::chrono::milliseconds> took;
  std::string times;
  for (int i = 0; i < kPuts; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ProcessResult put = c.RunWithInput({"put", "big" + std::to_string(i), "-"}, value);
    took.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - t0));
    times += std::to_string(took.back().count()) + " ";
    INFO("put " << i << ": " << put.Text());
    REQUIRE(put.exit_code == 0);
  }
  std::printf("16 MiB puts took (ms): %s\n", times.c_str());
  std::nth_element(took.begin(), took.begin() + kPuts / 2, took.end());
  INFO("put times (ms): " << times);
  CHECK(took[kPuts / 2] < kMedianPutBound);
  for (int i : {0, kPuts - 1}) {
    ProcessResult got = c.Run({"get", "big" + std::to_string(i)});
    REQUIRE(got.exit_code == 0);
    CHECK(got.out.size() == value.size());
    CHECK(got.out == value);
  }
  const std::vector<pid_t> pids = c.Pids();
  REQUIRE(pids.size() == 3);
  std::string last;
  const bool bounded = shardkv::testing::PollUntil(
      [&] {
        last.clear();
        bool all = true;
        for (pid_t pid : pids) {
          const long rss = RssKiB(pid);
          last += std::to_string(pid) + ": " + std::to_string(rss) + " KiB; ";
          all = all && rss > 0 && rss < kRssBoundKiB;
        }
        return all;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(250));
  INFO("RSS " << last);
  CHECK(bounded);
  CHECK(c.Run({"cluster", "down"}).exit_code == 0);
}
