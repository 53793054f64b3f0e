// RaftReplica over libraft with shardkv's raft_io, in one process: replicas talk through a
// TestNetwork that can partition them, and keep their state in real Storage directories, so
// restarts reload it from disk.
#include "consensus/raft_replica.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "consensus/raft_test_network.h"
#include "testing/temp_dir.h"

namespace shardkv::consensus {
namespace {

using namespace std::chrono_literals;

bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 0; i < 100000; ++i) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Records the commands applied, in order; its snapshot is the whole list.
class Recorder : public StateMachine {
 public:
  void Apply(uint64_t, std::string_view command) override {
    std::lock_guard<std::mutex> lock(mu_);
    applied_.emplace_back(command);
  }
  std::string Snapshot() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::string out;
    for (const std::string& c : applied_) out += std::to_string(c.size()) + ":" + c;
    return out;
  }
  Status Restore(std::string_view snapshot) override {
    std::vector<std::string> list;
    while (!snapshot.empty()) {
      const size_t colon = snapshot.find(':');
      if (colon == std::string_view::npos) return Status::Corruption("bad snapshot");
      const size_t n = std::stoul(std::string(snapshot.substr(0, colon)));
      if (snapshot.size() < colon + 1 + n) return Status::Corruption("bad snapshot");
      list.emplace_back(snapshot.substr(colon + 1, n));
      snapshot.remove_prefix(colon + 1 + n);
    }
    std::lock_guard<std::mutex> lock(mu_);
    applied_ = std::move(list);
    ++restores_;
    return Status::OK();
  }
  std::vector<std::string> applied() const {
    std::lock_guard<std::mutex> lock(mu_);
    return applied_;
  }
  int restores() const {
    std::lock_guard<std::mutex> lock(mu_);
    return restores_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> applied_;
  int restores_ = 0;
};

struct Server {
  uint64_t id = 0;
  std::string path;
  std::unique_ptr<storage::Storage> storage;
  std::unique_ptr<Recorder> machine;
  std::unique_ptr<RaftReplica> replica;
};

class Group {
 public:
  explicit Group(int n, unsigned snapshot_threshold = 64, unsigned trailing = 32)
      : threshold_(snapshot_threshold), trailing_(trailing) {
    for (int i = 1; i <= n; ++i) {
      founders_.push_back(
          {static_cast<uint64_t>(i), "server-" + std::to_string(i), RaftRole::kVoter});
    }
    for (int i = 1; i <= n; ++i) {
      Open(i, /*bootstrap=*/true);
    }
  }
  ~Group() {
    for (auto& [id, s] : servers_) Close(id);
  }

  void Open(uint64_t id, bool bootstrap) {
    Server& s = servers_[id];
    s.id = id;
    if (s.path.empty()) s.path = dir_.Sub("s" + std::to_string(id));
    storage::StorageOptions o;
    o.node_id = static_cast<uint32_t>(id);
    auto st = storage::Storage::Open(s.path, o);
    REQUIRE(st.ok());
    s.storage = std::move(*st);
    s.machine = std::make_unique<Recorder>();
    RaftReplicaOptions ro;
    ro.id = id;
    ro.address = "server-" + std::to_string(id);
    ro.snapshot_threshold = threshold_;
    ro.snapshot_trailing = trailing_;
    s.replica =
        std::make_unique<RaftReplica>(ro, s.storage.get(), s.machine.get(), net_.EndpointFor(id));
    if (bootstrap) REQUIRE(s.replica->Bootstrap(founders_).ok());
    net_.Attach(id, s.replica.get());
    REQUIRE(s.replica->Start().ok());
  }

  void Close(uint64_t id) {
    Server& s = servers_[id];
    net_.Attach(id, nullptr);
    if (s.replica) s.replica->Stop();
    s.replica.reset();
    if (s.storage) REQUIRE(s.storage->Close().ok());
    s.storage.reset();
  }

  // The one server that leads (in the highest term seen), or 0.
  uint64_t Leader(const std::set<uint64_t>& among = {}) {
    uint64_t leader = 0, term = 0;
    for (auto& [id, s] : servers_) {
      if (!s.replica || (!among.empty() && among.count(id) == 0)) continue;
      RaftStatus st = s.replica->status();
      if (st.state == RaftStatus::State::kLeader && st.term >= term) {
        leader = id;
        term = st.term;
      }
    }
    return leader;
  }

  uint64_t AwaitLeader(const std::set<uint64_t>& among = {}) {
    uint64_t leader = 0;
    REQUIRE(PollUntil([&] { return (leader = Leader(among)) != 0; }));
    return leader;
  }

  // Proposes through whoever leads, retrying while leadership moves (bounded).
  void Propose(const std::string& command) {
    Status last;
    for (int attempt = 0; attempt < 20; ++attempt) {
      const uint64_t leader = AwaitLeader();
      last = servers_[leader].replica->ProposeSync(command, 5s);
      if (last.ok()) return;
    }
    FAIL("could not commit " << command << ": " << last.ToString());
  }

  bool AllApplied(const std::vector<uint64_t>& ids, size_t n) {
    std::vector<std::string> first;
    for (uint64_t id : ids) {
      std::vector<std::string> a = servers_[id].machine->applied();
      if (a.size() != n) return false;
      if (first.empty()) first = a;
      if (a != first) return false;
    }
    return true;
  }

  Server& operator[](uint64_t id) { return servers_[id]; }
  testing::TestNetwork& net() { return net_; }
  const std::vector<RaftServer>& founders() const { return founders_; }

 private:
  shardkv::testing::TempDir dir_;
  unsigned threshold_, trailing_;
  testing::TestNetwork net_;
  std::vector<RaftServer> founders_;
  std::map<uint64_t, Server> servers_;
};

std::vector<std::string> Commands(const std::string& tag, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(tag + std::to_string(i));
  return out;
}

}  // namespace

TEST_CASE("raft: three replicas elect one leader and apply proposals in one order", "[consensus]") {
  Group g(3);
  const uint64_t leader = g.AwaitLeader();
  for (const std::string& c : Commands("c", 20)) g.Propose(c);
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 20); }));
  CHECK(g[1].machine->applied() == Commands("c", 20));
  // A follower refuses proposals, naming the leader.
  const uint64_t follower = leader == 1 ? 2 : 1;
  Status s = g[follower].replica->ProposeSync("x", 5s);
  if (g.Leader() == leader) {
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    CHECK(s.message().find("not the leader") != std::string::npos);
  }
  RaftStatus st = g[leader].replica->status();
  CHECK(st.configuration.size() == 3);
  CHECK(st.malformed_messages == 0);
}

TEST_CASE("raft: a leader cut off from the majority cannot commit", "[consensus]") {
  Group g(3);
  const uint64_t old_leader = g.AwaitLeader();
  g.Propose("before");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 1); }));
  g.net().Isolate(old_leader);
  // The isolated leader appends the proposal but can never commit it.
  Status lost = g[old_leader].replica->ProposeSync("lost", 3s);
  CHECK_FALSE(lost.ok());
  std::set<uint64_t> majority;
  for (uint64_t id : {1, 2, 3}) {
    if (id != old_leader) majority.insert(id);
  }
  const uint64_t new_leader = g.AwaitLeader(majority);
  CHECK(new_leader != old_leader);
  REQUIRE(g[new_leader].replica->ProposeSync("after", 10s).ok());
  g.net().HealAll();
  // The old leader steps down, drops its uncommitted entry and catches up.
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 2); }));
  CHECK(g[old_leader].machine->applied() == std::vector<std::string>{"before", "after"});
}

TEST_CASE("raft: a restarted replica reloads its log from storage and catches up", "[consensus]") {
  Group g(3);
  g.AwaitLeader();
  for (const std::string& c : Commands("a", 5)) g.Propose(c);
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 5); }));
  // Restart every server, one at a time, committing in between.
  for (uint64_t id : {1, 2, 3}) {
    g.Close(id);
    g.Propose("while-" + std::to_string(id) + "-down");
    g.Open(id, /*bootstrap=*/false);
  }
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 8); }));
  // A whole-group restart: the state comes back from disk alone.
  for (uint64_t id : {1, 2, 3}) g.Close(id);
  for (uint64_t id : {1, 2, 3}) g.Open(id, /*bootstrap=*/false);
  g.Propose("after-restart");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 9); }));
  // Bootstrapping a replica that has state is refused.
  g.Close(3);
  {
    storage::StorageOptions o;
    o.node_id = 3;
    auto st = storage::Storage::Open(g[3].path, o);
    REQUIRE(st.ok());
    Recorder machine;
    testing::TestNetwork::Endpoint* e = g.net().EndpointFor(3);
    RaftReplicaOptions ro;
    ro.id = 3;
    ro.address = "server-3";
    RaftReplica again(ro, st->get(), &machine, e);
    Status s = again.Bootstrap(g.founders());
    CHECK(s.code() == Status::Code::kFailedPrecondition);
    again.Stop();
    REQUIRE((*st)->Close().ok());
  }
}

TEST_CASE("raft: a replica behind a compacted log catches up from a snapshot", "[consensus]") {
  Group g(3, /*snapshot_threshold=*/8, /*trailing=*/2);
  g.AwaitLeader();
  g.Propose("first");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 1); }));
  const uint64_t leader = g.AwaitLeader();
  const uint64_t behind = leader == 3 ? 2 : 3;
  g.Close(behind);
  const std::vector<std::string> more = Commands("m", 40);
  for (const std::string& c : more) g.Propose(c);
  g.Open(behind, /*bootstrap=*/false);
  std::vector<uint64_t> all = {1, 2, 3};
  REQUIRE(PollUntil([&] { return g.AllApplied(all, 41); }));
  CHECK(g[behind].machine->restores() >= 1);
  // And a restart of a server whose own log was compacted restores its own snapshot.
  g.Close(leader);
  g.Open(leader, /*bootstrap=*/false);
  g.Propose("last");
  REQUIRE(PollUntil([&] { return g.AllApplied(all, 42); }));
  CHECK(g[leader].machine->restores() >= 1);
}

TEST_CASE("raft: servers join as voters and leave", "[consensus]") {
  Group g(3);
  g.AwaitLeader();
  g.Propose("one");
  // A pristine fourth server: no bootstrap, it learns everything from the leader.
  g.Open(4, /*bootstrap=*/false);
  Status added;
  for (int attempt = 0; attempt < 10; ++attempt) {
    added = g[g.AwaitLeader()].replica->AddServerSync({4, "server-4", RaftRole::kVoter}, 20s);
    if (added.ok()) break;
  }
  REQUIRE(added.ok());
  g.Propose("two");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3, 4}, 2); }));
  auto voters = [&](uint64_t at) {
    int n = 0;
    for (const RaftServer& s : g[at].replica->status().configuration) {
      if (s.role == RaftRole::kVoter) ++n;
    }
    return n;
  };
  CHECK(voters(4) == 4);
  // Remove a follower; the group keeps committing with the rest.
  const uint64_t leader = g.AwaitLeader();
  const uint64_t gone = leader == 2 ? 3 : 2;
  REQUIRE(g[leader].replica->RemoveServerSync(gone, 20s).ok());
  g.Close(gone);
  g.Propose("three");
  std::vector<uint64_t> rest;
  for (uint64_t id : {1, 2, 3, 4}) {
    if (id != gone) rest.push_back(id);
  }
  REQUIRE(PollUntil([&] { return g.AllApplied(rest, 3); }));
  CHECK(voters(rest[0]) == 3);
}

TEST_CASE("raft: leadership moves on request", "[consensus]") {
  Group g(3);
  const uint64_t leader = g.AwaitLeader();
  g.Propose("x");
  const uint64_t target = leader == 1 ? 2 : 1;
  Status s;
  for (int attempt = 0; attempt < 5; ++attempt) {
    s = g[g.AwaitLeader()].replica->TransferLeadershipSync(target, 10s);
    if (s.ok() || g.Leader() == target) break;
  }
  REQUIRE(PollUntil([&] { return g.Leader() == target; }));
  g.Propose("y");
  REQUIRE(PollUntil([&] { return g.AllApplied({1, 2, 3}, 2); }));
}

}  // namespace shardkv::consensus
