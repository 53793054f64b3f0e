// Group commit (design.md "Group commit"): client writes queued on an event-loop thread wait
// until the loop has run its other ready handlers, then go out together: one storage batch here
// and one replicaWriteBatch frame per peer. Node 1 is a local Storage and a Coordinator; node 2
// is a stand-in replica that counts the frames it gets. The test thread plays the event loop
// (common::LoopTurn) and decides when its "turn" ends.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cluster/coordinator.h"
#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "common/loop_turn.h"
#include "net/peer_pool.h"
#include "net/server.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

using namespace shardkv;

namespace {

// Replica 2: applies nothing, answers every write "applied", and counts the frames.
class CountingReplica : public net::RequestHandler {
 public:
  void Handle(net::Request request, std::function<void(net::Response)> done) override {
    net::Response r;
    r.epoch = request.epoch;
    if (std::get_if<net::ReplicaWriteRequest>(&request.body) != nullptr) {
      singles_.fetch_add(1);
      r.body = net::ReplicaWriteResponse{0};
    } else if (const auto* b = std::get_if<net::ReplicaWriteBatchRequest>(&request.body)) {
      batches_.fetch_add(1);
      batched_writes_.fetch_add(static_cast<int>(b->writes.size()));
      net::ReplicaWriteBatchResponse out;
      out.results.resize(b->writes.size());
      r.body = std::move(out);
    }
    done(std::move(r));
  }
  int singles() const { return singles_.load(); }
  int batches() const { return batches_.load(); }
  int batched_writes() const { return batched_writes_.load(); }

 private:
  std::atomic<int> singles_{0};
  std::atomic<int> batches_{0};
  std::atomic<int> batched_writes_{0};
};

// The test thread's event loop: work deferred to the end of the turn waits in `later` until
// RunTurnEnd(). Uninstalled on destruction, so no other test on this thread inherits it.
struct ManualLoop {
  std::vector<std::function<void()>> later;
  ManualLoop() {
    common::LoopTurn::Install([this](std::function<void()> fn) { later.push_back(std::move(fn)); });
  }
  ~ManualLoop() { common::LoopTurn::Install(nullptr); }
  void RunTurnEnd() {
    std::vector<std::function<void()>> run;
    run.swap(later);
    for (auto& fn : run) fn();
  }
};

// Polls `cond` every 5 ms until it holds or 10 s pass.
bool WithinTenSeconds(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!cond()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct GroupCommitBed {
  shardkv::testing::TempDir dir;
  CountingReplica replica;
  std::unique_ptr<net::Server> server;
  std::unique_ptr<storage::Storage> storage;
  std::unique_ptr<cluster::MapStore> maps;
  std::unique_ptr<cluster::HintStore> hints;
  net::PeerPool peers{1};
  std::shared_ptr<cluster::Coordinator> coordinator;

  GroupCommitBed() {
    server = std::make_unique<net::Server>(net::ServerOptions{}, &replica);
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
  }
  ~GroupCommitBed() {
    peers.Close();
    server->Stop();
  }

  void Put(const std::string& key, std::function<void(StatusOr<uint64_t>)> done) {
    coordinator->Write(maps->Current(), 42, key, std::optional<std::string>("v-" + key),
                       net::Consistency::kDefault, std::move(done));
  }
};

}  // namespace

TEST_CASE("group commit: writes of one loop turn go out as one batch per peer", "[group_commit]") {
  GroupCommitBed bed;
  const uint64_t epoch = bed.maps->Current()->epoch();
  std::atomic<int> acked{0}, failed{0};
  {
    ManualLoop loop;
    for (int i = 0; i < 5; ++i) {
      bed.Put("k" + std::to_string(i),
              [&](StatusOr<uint64_t> ts) { (ts.ok() ? acked : failed).fetch_add(1); });
    }
    // Queued, not sent: one drain waits for the end of the turn.
    CHECK(loop.later.size() == 1);
    CHECK(acked.load() + failed.load() == 0);
    CHECK(bed.replica.singles() + bed.replica.batches() == 0);
    CHECK_FALSE(bed.storage->GetEnvelope(42, "k0").ok());
    // The epoch barrier waits for queued writes as for writes in flight.
    CHECK_FALSE(bed.coordinator->WaitForOlderEpochs(
        epoch + 1, std::chrono::steady_clock::now() + std::chrono::milliseconds(50)));
    loop.RunTurnEnd();
  }
  REQUIRE(WithinTenSeconds([&] { return acked.load() + failed.load() == 5; }));
  CHECK(failed.load() == 0);
  // One frame for the five writes; none sent alone.
  CHECK(bed.replica.batches() == 1);
  CHECK(bed.replica.batched_writes() == 5);
  CHECK(bed.replica.singles() == 0);
  for (int i = 0; i < 5; ++i) {
    auto local = bed.storage->GetEnvelope(42, "k" + std::to_string(i));
    REQUIRE(local.ok());
    CHECK(local->value == "v-k" + std::to_string(i));
  }
  CHECK(bed.coordinator->WaitForOlderEpochs(
      epoch + 1, std::chrono::steady_clock::now() + std::chrono::seconds(10)));
}

TEST_CASE("group commit: a write off any event loop goes out at once", "[group_commit]") {
  GroupCommitBed bed;
  std::promise<StatusOr<uint64_t>> done;
  bed.Put("alone", [&](StatusOr<uint64_t> ts) { done.set_value(std::move(ts)); });
  auto put = done.get_future();
  REQUIRE(put.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK(put.get().ok());
  CHECK(bed.replica.singles() == 1);
  CHECK(bed.replica.batches() == 0);
}
