// Re-stamping (design.md "Re-stamping"): a replica holding a newer version answers "superseded",
// which is no ack; the coordinator writes again above it, but only while the write's client still
// waits. Node 2 is a stand-in replica that holds a newer version of every key.
#include <atomic>
#include <catch2/catch.hpp>
#include <future>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "common/hlc.h"
#include "net/peer_pool.h"
#include "net/server.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

using namespace shardkv;

namespace {

// Replica 2: holds a version at `ahead` for every key, as a node whose clock ran fast would, and
// answers a replica write older than that "superseded" with its clock at `ahead`. Set once the
// coordinator is ready (SetAhead): a node opened slowly (a sanitizer build) would otherwise
// start writing after `ahead` had passed, and nothing would be superseded.
class FastReplica : public net::RequestHandler {
 public:
  void SetAhead(uint64_t ahead) { ahead_.store(ahead); }
  void Handle(net::Request request, std::function<void(net::Response)> done) override {
    const uint64_t ahead = ahead_.load();
    net::Response r;
    r.epoch = request.epoch;
    r.ts = ahead;
    const auto* w = std::get_if<net::ReplicaWriteRequest>(&request.body);
    const bool older = w != nullptr && w->ts <= ahead;
    if (older) superseded_.fetch_add(1);
    r.body = net::ReplicaWriteResponse{static_cast<uint8_t>(
        older ? storage::WriteOutcome::kSuperseded : storage::WriteOutcome::kApplied)};
    done(std::move(r));
  }
  int superseded() const { return superseded_.load(); }

 private:
  std::atomic<uint64_t> ahead_{0};
  std::atomic<int> superseded_{0};
};

// Node 1 (a local Storage and a Coordinator) with RF 2 and W 2: node 2 is a FastReplica.
struct TwoReplicas {
  shardkv::testing::TempDir dir;
  uint64_t ahead = 0;  // 300 ms past the end of the constructor
  FastReplica fast;
  std::unique_ptr<net::Server> server;
  std::unique_ptr<storage::Storage> storage;
  std::unique_ptr<cluster::MapStore> maps;
  std::unique_ptr<cluster::HintStore> hints;
  net::PeerPool peers{1};
  std::shared_ptr<cluster::Coordinator> coordinator;

  TwoReplicas() {
    server = std::make_unique<net::Server>(net::ServerOptions{}, &fast);
    REQUIRE(server->Start().ok());
    storage::StorageOptions so;
    so.node_id = 1;
    auto opened = storage::Storage::Open(dir.Sub("db"), so);
    REQUIRE(opened.ok());
    storage = std::move(opened).value();
    maps = std::make_unique<cluster::MapStore>(storage.get());
    hints = std::make_unique<cluster::HintStore>(storage.get(), 60000, [] { return uint64_t{1}; });
    ClusterParams params;
    params.replication_factor = 2;
    params.write_quorum = 2;
    params.read_quorum = 1;
    auto map = ClusterMap::Create(
        7, params,
        {{1, "127.0.0.1:1", 1, NodeState::kUp},
         {2, "127.0.0.1:" + std::to_string(server->bound_port()), 1, NodeState::kUp}},
        1);
    REQUIRE(map.ok());
    REQUIRE(maps->Reset(*map).ok());
    cluster::CoordinatorOptions co;
    co.self_id = 1;
    coordinator =
        std::make_shared<cluster::Coordinator>(co, storage.get(), maps.get(), &peers, hints.get());
    ahead = common::HlcClock::Make(common::HlcClock::WallClockMs() + 300, 0);
    fast.SetAhead(ahead);
  }
  ~TwoReplicas() {
    peers.Close();
    server->Stop();
  }

  StatusOr<uint64_t> Put(const std::string& key, const std::string& value, uint64_t deadline_ms) {
    cluster::WriteSpec spec;
    spec.value = value;
    spec.deadline_ms = deadline_ms;
    std::promise<StatusOr<uint64_t>> done;
    coordinator->Write(maps->Current(), 42, key, std::move(spec), net::Consistency::kDefault,
                       [&](StatusOr<uint64_t> ts) { done.set_value(std::move(ts)); });
    return done.get_future().get();
  }
};

}  // namespace

TEST_CASE("coordinator: a superseded write is re-stamped above the newer version", "[restamp]") {
  TwoReplicas c;
  auto put = c.Put("k", "later", common::HlcClock::WallClockMs() + 60000);
  INFO(put.status().ToString());
  REQUIRE(put.ok());
  CHECK(*put > c.ahead);
  CHECK(c.fast.superseded() == 1);  // the first attempt; the re-stamped one applied
  CHECK(c.coordinator->stats().restamped == 1);
  auto local = c.storage->GetEnvelope(42, "k");
  REQUIRE(local.ok());
  CHECK(local->timestamp == *put);
}

TEST_CASE("coordinator: a write past its client's deadline is not re-stamped", "[restamp]") {
  // What a coordinator resuming from SIGSTOP with the write in flight sees: the client gave up
  // long ago, and newer writes were acknowledged meanwhile. Lifting this one above them would
  // undo them, so the superseded reply is just no ack.
  TwoReplicas c;
  auto put = c.Put("k", "old, in flight", common::HlcClock::WallClockMs() - 1);
  REQUIRE_FALSE(put.ok());
  CHECK(put.status().code() == Status::Code::kUnavailable);
  CHECK(put.status().message().find("holds a newer version") != std::string::npos);
  CHECK(c.fast.superseded() == 1);
  CHECK(c.coordinator->stats().restamped == 0);
}
