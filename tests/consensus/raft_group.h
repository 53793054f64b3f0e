// Test helpers of the consensus tests: a group of RaftReplicas over a TestNetwork, each with its
// own Storage directory (restarts reload it) and a DiskFault that can make its Raft store refuse
// writes; a state machine that records what it applied.
#pragma once

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "consensus/raft_replica.h"
#include "consensus/raft_test_network.h"
#include "testing/temp_dir.h"
#include "testing/time_scale.h"

namespace shardkv::consensus {

// Under a slow build the wait is stretched by testing::TimeScale() (testing/time_scale.h).
inline bool PollUntil(const std::function<bool()>& done,
                      std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + shardkv::testing::Scaled(limit);
  for (int i = 0; i < 100000; ++i) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling, bounded above
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
  void Reset() override {
    std::lock_guard<std::mutex> lock(mu_);
    applied_.clear();
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

// A disk that can be made to refuse writes: the store fault of one server (RaftLogStore's
// StoreFault), failing every Raft store write with "no space left on device" while set.
class DiskFault {
 public:
  void Fill() { full_ = true; }
  void Free() { full_ = false; }
  uint64_t refused() const { return refused_.load(); }
  Status Check() {
    if (!full_) return Status::OK();
    ++refused_;
    return Status::IOError("While appending to file: raft: No space left on device");
  }

 private:
  std::atomic<bool> full_{false};
  std::atomic<uint64_t> refused_{0};
};

struct Server {
  uint64_t id = 0;
  std::string path;
  std::shared_ptr<DiskFault> disk = std::make_shared<DiskFault>();
  std::unique_ptr<storage::Storage> storage;
  std::unique_ptr<Recorder> machine;
  std::unique_ptr<RaftReplica> replica;
};

class Group {
 public:
  // `tune` adjusts every server's options (deadlines, recovery interval) before it starts.
  explicit Group(int n, unsigned snapshot_threshold = 64, unsigned trailing = 32,
                 std::function<void(RaftReplicaOptions*)> tune = nullptr)
      : threshold_(snapshot_threshold), trailing_(trailing), tune_(std::move(tune)) {
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
    ro.store_fault = [disk = s.disk] { return disk->Check(); };
    if (tune_) tune_(&ro);
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
      last = servers_[leader].replica->ProposeSync(
          command, shardkv::testing::Scaled(std::chrono::seconds(5)));
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
  std::function<void(RaftReplicaOptions*)> tune_;
  testing::TestNetwork net_;
  std::vector<RaftServer> founders_;
  std::map<uint64_t, Server> servers_;
};

inline std::vector<std::string> Commands(const std::string& tag, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(tag + std::to_string(i));
  return out;
}

}  // namespace shardkv::consensus
