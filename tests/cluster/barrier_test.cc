// The epoch barrier (design.md "Epoch barrier"): a node acknowledges a new map only after every
// request it coordinated under an older epoch has finished, meaning every replica call returned
// or passed its deadline, not merely W of them. A peer that accepts connections but never
// answers keeps one replica call open until its deadline.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "clustermap/cluster_map_builder.h"
#include "net/peer_pool.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

using namespace shardkv;

namespace {

// A listening socket nobody reads from: connects succeed, requests are never answered.
struct SilentPeer {
  int fd = -1;
  uint16_t port = 0;
  SilentPeer() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof(addr);
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~SilentPeer() { ::close(fd); }
};

}  // namespace

TEST_CASE("coordinator: the epoch barrier waits for every replica call of older epochs",
          "[membership][barrier]") {
  shardkv::testing::TempDir dir;
  storage::StorageOptions so;
  so.node_id = 1;
  auto storage = storage::Storage::Open(dir.Sub("db"), so);
  REQUIRE(storage.ok());
  cluster::MapStore maps(storage->get());
  cluster::HintStore hints(storage->get(), 60000, [] { return uint64_t{1}; });
  net::PeerPool peers(1);
  SilentPeer silent;
  ClusterParams params;
  params.replication_factor = 2;
  params.write_quorum = 1;
  params.read_quorum = 1;
  auto map =
      ClusterMap::Create(7, params,
                         {{1, "127.0.0.1:1", 1, NodeState::kUp},
                          {2, "127.0.0.1:" + std::to_string(silent.port), 1, NodeState::kUp}},
                         1);
  REQUIRE(map.ok());
  REQUIRE(maps.Reset(*map).ok());
  cluster::CoordinatorOptions co;
  co.self_id = 1;
  co.replica_timeout = std::chrono::milliseconds(800);
  auto coordinator =
      std::make_shared<cluster::Coordinator>(co, storage->get(), &maps, &peers, &hints);

  std::promise<StatusOr<uint64_t>> acked;
  const auto start = std::chrono::steady_clock::now();
  coordinator->Write(maps.Current(), 42, "k", std::string("v"), net::Consistency::kOne,
                     [&](StatusOr<uint64_t> ts) { acked.set_value(std::move(ts)); });
  // W = 1 is met by the local write at once...
  REQUIRE(acked.get_future().get().ok());
  // ...but the call to the silent replica is still open, so the barrier for epoch 2 holds.
  CHECK_FALSE(coordinator->WaitForOlderEpochs(
      2, std::chrono::steady_clock::now() + std::chrono::milliseconds(200)));
  // Once the replica call passes its deadline the op ends and the barrier opens.
  CHECK(coordinator->WaitForOlderEpochs(2, start + std::chrono::seconds(10)));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(800));
  // The timed-out replica got a hint; ops of the new epoch itself never block the barrier.
  CHECK(coordinator->stats().hints_written == 1);
  CHECK(coordinator->WaitForOlderEpochs(1, std::chrono::steady_clock::now()));
  peers.Close();
}

TEST_CASE("map store: a map a reply carries is decoded only while this node is behind it",
          "[membership][barrier]") {
  shardkv::testing::TempDir dir;
  storage::StorageOptions so;
  so.node_id = 1;
  auto storage = storage::Storage::Open(dir.Sub("db"), so);
  REQUIRE(storage.ok());
  cluster::MapStore maps(storage->get());
  auto first = ClusterMap::Create(7, ClusterParams{}, {{1, "127.0.0.1:1"}, {2, "127.0.0.1:2"}}, 1);
  REQUIRE(first.ok());
  REQUIRE(maps.Reset(*first).ok());
  // Bytes that do not decode: at or below the current epoch they are never looked at.
  for (uint64_t epoch : {uint64_t{0}, uint64_t{1}}) {
    auto skipped = maps.InstallIfNewer(epoch, "not a map");
    REQUIRE(skipped.ok());
    CHECK_FALSE(*skipped);
  }
  auto empty = maps.InstallIfNewer(5, "");
  REQUIRE(empty.ok());
  CHECK_FALSE(*empty);
  // Above it, they are decoded: a bad map is an error, a good one is installed once.
  CHECK_FALSE(maps.InstallIfNewer(2, "not a map").ok());
  const ClusterMap second = clustermap::WithEpoch(*first, 2, 1);
  auto installed = maps.InstallIfNewer(2, second.Encode());
  REQUIRE(installed.ok());
  CHECK(*installed);
  CHECK(maps.Current()->epoch() == 2);
  auto again = maps.InstallIfNewer(2, second.Encode());
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
}
