// A history check of expiry against a 3-node in-process cluster: concurrent SETs, EXPIREs and
// PERSISTs from several clients, one node stopped and restarted meanwhile. Checks: no
// acknowledged SET is lost, and no acknowledged SET is hidden by an EXPIRE acknowledged before
// the SET began (expiry is its own LWW register: design.md "Expiry").
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "testing/cluster_util.h"
#include "testing/in_process_cluster.h"
#include "testing/time_scale.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

namespace {

using Clock = std::chrono::steady_clock;

uint64_t WallMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

std::string Key(int i) { return "ttlh/" + std::to_string(i); }

}  // namespace

TEST_CASE("ttl history: concurrent SET, EXPIRE and PERSIST lose no acknowledged write",
          "[ttl][history]") {
  ClusterParams params;
  params.mode = PlacementMode::kRing;
  params.shards = 64;
  InProcessCluster cluster(3, params);
  REQUIRE(cluster.Start().ok());
  constexpr int kKeys = 40;
  constexpr int kWriters = 2;
  constexpr int kExpirers = 3;
  constexpr uint64_t kMaxTtlMs = 150;

  auto connect = [&] {
    ClientOptions o;
    o.timeout_ms = 5000;
    auto c = cluster.Connect(o);
    REQUIRE(c.ok());
    return std::move(c).value();
  };

  // last_set[i]: the value of key i's writer's last acknowledged SET.
  std::vector<std::string> last_set(kKeys);
  std::atomic<uint64_t> acked_sets{0}, failed{0}, acked_expires{0}, acked_persists{0};
  std::atomic<uint64_t> last_expire_ack_ms{0};
  // Every client connects here, on the test's thread: Catch2's assertions (connect's REQUIRE)
  // are not thread-safe, and TSan reported two workers' REQUIREs racing on its run context.
  std::vector<std::unique_ptr<Client>> clients;
  for (int t = 0; t < kWriters + kExpirers; ++t) clients.push_back(connect());
  // The workload's phase, from when every client is ready; stretched by a slow build's
  // testing::TimeScale() so that it makes as many requests as a release build.
  const auto phase_end = Clock::now() + shardkv::testing::Scaled(std::chrono::milliseconds(2500));
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      Client* client = clients[w].get();
      uint64_t n = 0;
      for (int op = 0; op < 100'000 && Clock::now() < phase_end; ++op) {
        for (int i = w; i < kKeys; i += kWriters) {
          const std::string value = "w" + std::to_string(w) + "-" + std::to_string(++n);
          if (client->Put(Key(i), value).ok()) {
            last_set[i] = value;
            ++acked_sets;
          } else {
            ++failed;
          }
        }
      }
    });
  }
  for (int e = 0; e < kExpirers; ++e) {
    threads.emplace_back([&, e] {
      Client* client = clients[kWriters + e].get();
      std::mt19937_64 rng(1000 + e);
      for (int op = 0; op < 100'000 && Clock::now() < phase_end; ++op) {
        const std::string key = Key(static_cast<int>(rng() % kKeys));
        const uint64_t kind = rng() % 4;
        StatusOr<uint64_t> r =
            kind == 0 ? client->Persist(key)
                      : client->Expire(key, std::chrono::milliseconds(1 + rng() % kMaxTtlMs));
        if (r.ok()) {
          ++(kind == 0 ? acked_persists : acked_expires);
          uint64_t now = WallMs(), prev = last_expire_ack_ms.load();
          while (now > prev && !last_expire_ack_ms.compare_exchange_weak(prev, now)) {
          }
        } else if (!r.status().IsNotFound()) {
          ++failed;
        }
      }
    });
  }
  // A node goes down and comes back while the workload runs: hints carry both registers.
  // (Progress-driven, each wait bounded: the workload ends at phase_end regardless.)
  auto wait_for_sets = [&](uint64_t n) {
    return shardkv::testing::PollUntil([&] { return acked_sets.load() >= n; },
                                       std::chrono::seconds(3), std::chrono::milliseconds(5));
  };
  wait_for_sets(150);
  cluster.StopNode(3);
  wait_for_sets(acked_sets.load() + 300);
  REQUIRE(cluster.RestartNode(3).ok());
  for (auto& t : threads) t.join();
  INFO("sets " << acked_sets << " expires " << acked_expires << " persists " << acked_persists
               << " failed " << failed);
  REQUIRE(acked_sets > 100);
  REQUIRE(acked_expires > 100);
  CHECK(acked_persists > 10);

  // Every EXPIRE is now acknowledged; let the longest of them pass (bounded by the clock).
  const uint64_t quiet_after = last_expire_ack_ms.load() + kMaxTtlMs + 50;
  REQUIRE(shardkv::testing::PollUntil([&] { return WallMs() > quiet_after; },
                                      std::chrono::seconds(5), std::chrono::milliseconds(20)));

  auto client = connect();
  // A SET acknowledged after every EXPIRE: it must read, at ALL, with no TTL.
  for (int i = 0; i < kKeys; ++i) {
    const std::string value = "final-" + std::to_string(i);
    REQUIRE(client->Put(Key(i), value).ok());
    last_set[i] = value;
  }
  int lost = 0, hidden_by_older_expire = 0;
  for (int i = 0; i < kKeys; ++i) {
    auto got = client->GetWithExpiry(Key(i), Consistency::kAll);
    if (got.status().IsNotFound()) {
      ++hidden_by_older_expire;
    } else if (!got.ok() || got->value != last_set[i] || got->expires_at_ms != 0) {
      ++lost;
    }
  }
  CHECK(lost == 0);
  CHECK(hidden_by_older_expire == 0);

  // And every replica converges to that record (hints and read repair carried the registers).
  for (int i = 0; i < kKeys; ++i) {
    CHECK(shardkv::testing::PollUntil(
        [&] {
          for (uint32_t id = 1; id <= 3; ++id) {
            auto local = cluster.LocalRead(id, Key(i));
            if (!local.ok()) return false;
            if (!local->found) continue;  // not a replica of this key
            if (local->value != last_set[i] || local->expiry.expires_at_ms != 0) return false;
          }
          return true;
        },
        std::chrono::seconds(15), std::chrono::milliseconds(20)));
  }
}
