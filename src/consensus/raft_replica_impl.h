// RaftReplica::Impl, shared by raft_replica.cc (the public methods) and raft_replica_impl.cc (the
// loop's housekeeping: starting again after a store error, membership changes and their
// deadlines). Internal to src/consensus (it includes Asio).
#pragma once

// A C++ standard header before Asio's (see raft_io.h).
// clang-format off
#include <cstddef>
// clang-format on

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "consensus/libraft.h"
#include "consensus/raft_io.h"
#include "consensus/raft_log_store.h"
#include "consensus/raft_replica.h"

namespace shardkv::consensus {

using Clock = std::chrono::steady_clock;

// A libraft error code as a Status, naming `what` (and libraft's message when `r` is given).
Status FromRaft(int rv, raft* r, const std::string& what);

// A membership change in flight (AddServer, RemoveServer, AssignRole): libraft holds `req` until
// it calls back, so the request lives until then even when it was given up at its deadline.
struct ChangeRequest {
  raft_change req{};
  RaftReplica::Impl* impl = nullptr;
  uint64_t seq = 0;
  uint64_t id = 0;
  int role = RAFT_VOTER;
  bool then_assign = false;
  bool promoting = false;  // the current step makes `id` a voter (libraft catches it up first)
  std::string what;        // "making server 4 a voter", for the log and the errors
  Clock::time_point deadline;
  bool answered = false;  // `done` ran (the change was given up at its deadline)
  RaftReplica::Done done;
};

struct RaftReplica::Impl {
  RaftReplicaOptions options;
  StateMachine* machine;
  asio::io_context loop{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{loop.get_executor()};
  std::thread thread;
  std::thread::id loop_thread;
  RaftLogStore store;
  RaftIo io;
  raft r{};
  raft_fsm fsm{};
  bool initialised = false;
  // Set by Start; read by Receive on whatever thread delivers a peer's message (ThreadSanitizer
  // found the plain bool racing with a delivery from another replica's loop).
  std::atomic<bool> started{false};
  std::atomic<bool> stopped{false};
  bool closed = false;

  // On the loop. kRunning: libraft runs. After a store write failed: kClosing (libraft closes),
  // then kDown (closed; the store is tried every recovery_interval) until it starts again.
  // kStopped: Stop() closed it for good.
  enum class Phase { kRunning, kClosing, kDown, kStopped };
  Phase phase = Phase::kRunning;
  bool stop_requested = false;  // Stop() while kClosing
  Clock::time_point down_since;
  Clock::time_point next_try;
  asio::steady_timer housekeeping{loop};
  std::map<uint64_t, ChangeRequest*> changes;  // in flight, by seq
  uint64_t next_change = 1;
  std::atomic<uint64_t> recoveries{0};
  std::atomic<uint64_t> changes_given_up{0};

  Impl(RaftReplicaOptions o, storage::Storage* storage, StateMachine* m, RaftTransport* t)
      : options(std::move(o)),
        machine(m),
        store(storage, options.store_fault),
        io(loop, &store, t,
           options.seed != 0 ? options.seed : static_cast<uint32_t>(options.id * 2654435761u)) {
    fsm.version = 1;
    fsm.data = this;
    fsm.apply = ApplyCb;
    fsm.snapshot = SnapshotCb;
    fsm.restore = RestoreCb;
  }

  static Impl* Of(raft* r) { return static_cast<Impl*>(static_cast<raft_fsm*>(r->fsm)->data); }

  Status Init() {
    if (initialised) return Status::OK();
    const int rv = raft_init(&r, io.io(), &fsm, options.id, options.address.c_str());
    if (rv != 0) return FromRaft(rv, nullptr, "raft_init");
    initialised = true;
    return Status::OK();
  }

  // raft_init resets these, so a start after a store error sets them again.
  Status Configure();

  // Requests are refused while libraft is closed (stopped, or starting again after an error).
  bool Refuse(const RaftReplica::Done& done) {
    if (closed) {
      done(Status::Unavailable("raft replica is stopped"));
      return true;
    }
    if (phase != Phase::kRunning) {
      done(Status::Unavailable(
          "raft server " + std::to_string(options.id) +
          " is out of the group until its store takes writes again: " + io.last_error()));
      return true;
    }
    return false;
  }

  void ArmHousekeeping();
  void Housekeeping();

  // libraft closed after a store error.
  void Closed();
  void TryStartAgain();

  void Finish();
  std::string Pending(const ChangeRequest& c);

  void GiveUpLateChanges(Clock::time_point now);

  // The outcome libraft reported for a change.
  Status Outcome(int status, const ChangeRequest& c) const;

  bool OnLoop() const { return std::this_thread::get_id() == loop_thread; }

  static int ApplyCb(raft_fsm* fsm, const raft_buffer* buf, void** result);
  static int SnapshotCb(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n);

  static int RestoreCb(raft_fsm* fsm, raft_buffer* buf);

  // Runs `fn` on the loop (or inline before the loop starts / on it).
  template <typename F>
  void Run(F fn, const Done& done) {
    if (stopped.load()) {
      done(Status::Unavailable("raft replica " + std::to_string(options.id) + " is stopped"));
      return;
    }
    asio::post(loop, std::move(fn));
  }

  Status NotLeader();
};

}  // namespace shardkv::consensus
