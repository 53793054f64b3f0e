// RaftReplica: one server of a Raft group (libraft, Debian libraft-dev) with its own event-loop
// thread, its state in the node's meta CF (RaftLogStore), its messages over a RaftTransport, and
// a StateMachine that committed commands are applied to (design.md "Consensus").
//
// Every method is thread-safe: calls are posted to the replica's loop, where libraft runs.
// Completion callbacks run on that loop: they must not block and must not call the *Sync
// methods. The state machine's methods run on the loop too.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "consensus/raft_log_store.h"
#include "consensus/raft_transport.h"
#include "shardkv/status.h"
#include "storage/storage.h"

namespace shardkv::consensus {

// What the group agrees on. Apply runs once per committed command, in log order, on every
// replica; after a restart the replica re-applies from its latest snapshot (Restore) onwards, so
// Apply must be deterministic and rebuild the state from scratch, not act on the outside world.
class StateMachine {
 public:
  virtual ~StateMachine() = default;
  virtual void Apply(uint64_t index, std::string_view command) = 0;
  virtual std::string Snapshot() = 0;
  [[nodiscard]] virtual Status Restore(std::string_view snapshot) = 0;
  // Forget everything applied: the replica starts again from its stored state (after a store
  // error, see RaftReplica::Start) and re-applies from there, as after a restart.
  virtual void Reset() = 0;
};

enum class RaftRole : int { kStandby = 0, kVoter = 1, kSpare = 2 };

struct RaftServer {
  uint64_t id = 0;
  std::string address;
  RaftRole role = RaftRole::kVoter;
  friend bool operator==(const RaftServer&, const RaftServer&) = default;
};

struct RaftReplicaOptions {
  uint64_t id = 0;
  std::string address;
  std::chrono::milliseconds heartbeat_timeout{100};
  std::chrono::milliseconds election_timeout{1000};
  // A snapshot after this many applied entries, keeping `snapshot_trailing` entries behind it.
  unsigned snapshot_threshold = 64;
  unsigned snapshot_trailing = 32;
  uint32_t seed = 0;  // 0: from the id
  // A membership change not done by then is given up (see AddServer).
  std::chrono::milliseconds change_deadline{10000};
  // How long a server being made a voter may take to catch up (libraft's catch-up round bound:
  // a promotion whose server makes no progress is aborted then). Below change_deadline.
  std::chrono::milliseconds catch_up_timeout{5000};
  // After a store write failed: how often the store is tried again (see Start).
  std::chrono::milliseconds recovery_interval{1000};
  // Tests only: consulted before every Raft store write (RaftLogStore's StoreFault).
  StoreFault store_fault;
};

struct RaftStatus {
  enum class State { kUnavailable, kFollower, kCandidate, kLeader } state = State::kUnavailable;
  uint64_t term = 0;
  uint64_t leader_id = 0;
  std::string leader_address;
  uint64_t last_index = 0;
  uint64_t last_applied = 0;
  std::vector<RaftServer> configuration;  // the latest one this replica knows
  // The index of the committed configuration, and of a newer one appended but not committed yet
  // (0: none). Leader only: the server being caught up to become a voter (0: none).
  uint64_t configuration_index = 0;
  uint64_t uncommitted_configuration_index = 0;
  uint64_t promotee_id = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t malformed_messages = 0;
  std::string last_error;
  // A store write failed and the replica has not started again since (state kUnavailable).
  bool recovering = false;
  uint64_t disk_errors = 0;       // failed store writes
  uint64_t recoveries = 0;        // starts again after a store error
  uint64_t changes_given_up = 0;  // membership changes given up at their deadline
};

class RaftReplica {
 public:
  using Done = std::function<void(Status)>;

  // REQUIRES: storage, machine and transport outlive the replica.
  RaftReplica(RaftReplicaOptions options, storage::Storage* storage, StateMachine* machine,
              RaftTransport* transport);
  ~RaftReplica();  // Stop()
  RaftReplica(const RaftReplica&) = delete;
  RaftReplica& operator=(const RaftReplica&) = delete;

  // Before Start, on a pristine replica only: the group's first configuration (every founding
  // server bootstraps the same one). FailedPrecondition if this replica has state already.
  [[nodiscard]] Status Bootstrap(const std::vector<RaftServer>& servers);
  // Loads the persisted state (restoring the latest snapshot) and starts the loop.
  //
  // A store write that fails later (a full disk) takes the replica out of the group: it stops
  // sending and receiving, closes libraft, and every recovery_interval tries a write; once one
  // succeeds it starts libraft again from the stored state, as a restarted process would, and
  // catches up from the leader. Meanwhile its status says `recovering`, and requests fail with
  // Unavailable.
  [[nodiscard]] Status Start();
  // Stops the loop after libraft closed. Idempotent.
  void Stop();

  // A message from the transport (any thread).
  void Receive(std::string message);

  // Appends `command` to the log if this replica leads; `done` runs once it is committed and
  // applied here (OK), or with the reason it was not: FailedPrecondition "not the leader"
  // (naming the leader if known), Aborted when leadership was lost before it committed (it may
  // still commit later: indeterminate), Unavailable after Stop.
  void Propose(std::string command, Done done);
  // Membership, leader only, one change at a time (libraft's rule): AddServer adds the server
  // and then assigns `role` (a voter is promoted once it has caught up).
  //
  // Each change has a deadline (change_deadline). A promotion whose server does not catch up
  // within catch_up_timeout is aborted (Unavailable "gave up ...": nothing took effect). A change
  // still pending at its deadline is given up: `done` gets Timeout "gave up ..." (its outcome is
  // unknown: an appended configuration may still commit, and blocks the next change until it
  // does or a new leader drops it), and the log says so. FailedPrecondition "a configuration
  // change is already in progress" while libraft still holds an earlier one.
  void AddServer(RaftServer server, Done done);
  void RemoveServer(uint64_t id, Done done);
  // Gives a server of the configuration another role (a voter is promoted once caught up).
  void AssignRole(uint64_t id, RaftRole role, Done done);
  // Leadership to `id` (0: any voter that is up to date).
  void TransferLeadership(uint64_t id, Done done);

  RaftStatus status() const;
  // Blocking forms, for tests and tools; they wait at most `timeout`.
  [[nodiscard]] Status ProposeSync(std::string command, std::chrono::milliseconds timeout);
  [[nodiscard]] Status AddServerSync(RaftServer server, std::chrono::milliseconds timeout);
  [[nodiscard]] Status RemoveServerSync(uint64_t id, std::chrono::milliseconds timeout);
  [[nodiscard]] Status AssignRoleSync(uint64_t id, RaftRole role,
                                      std::chrono::milliseconds timeout);
  [[nodiscard]] Status TransferLeadershipSync(uint64_t id, std::chrono::milliseconds timeout);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardkv::consensus
