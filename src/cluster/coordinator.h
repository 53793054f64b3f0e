// Coordinator: runs a client's read or write against the key's replica set with quorums
// (design.md "Replication and consistency").
//
// Writes: the coordinator stamps the write with its HLC (after moving past the client's newest
// timestamp), sends it to every replica in parallel (itself through local storage), and answers
// after W acknowledgements, where W follows the consistency level: one = 1, quorum = the
// cluster's W, all = RF. Only replicas of the key count (strict quorum). A replica that fails or
// times out gets a hint, which never counts toward W. If too few replicas acknowledge, the error
// names the unavailable replicas and why.
//
// Reads: the coordinator asks every replica, answers with the merge of the replies (per register,
// the newest version by timestamp, then node id: value_envelope.h Merge) once Q have answered,
// and after the rest answer repairs the replicas whose record lacks part of that merge (read
// repair sends the merged record). Whether the record is live (not a tombstone, not expired by
// this node's wall clock) is the caller's decision.
//
// Epoch accounting: every operation is counted under the map epoch it started with until *all*
// its replica calls have returned or timed out, not just W of them. WaitForOlderEpochs() is the
// epoch barrier a node passes before acknowledging a new map.
//
// Thread-safety: all methods are thread-safe. `done` callbacks run on network threads or on the
// caller's thread, before or after the call returns: a write waits in group commit's queue
// (WriteMany) until the caller's event loop has run its other ready handlers, so a caller on an
// event loop thread must never block waiting for a write's `done`.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/hint_store.h"
#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "storage/storage.h"

namespace shardkv::cluster {

struct CoordinatorOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds replica_timeout{1000};
  // Non-OK for a replica that must not serve reads (it needs repair: RepairState::ReadRefusal).
  // Such a replica is not asked: it counts as a failed replica with that reason, so it never
  // counts toward Q and is never read-repaired. Empty: every replica is asked.
  std::function<Status(uint32_t node_id)> read_refusal;
  // True when node `node_id`'s clock agrees with this node's (Membership::ClockAgrees). A replica
  // write to such a node carries a deadline (now + replica_timeout, this node's wall clock), past
  // which the receiver drops it instead of applying it late (after a heal, TCP delivered writes
  // 19 s old). A node whose clock may be off gets none: it would drop writes that are on time.
  // Empty: no deadlines.
  std::function<bool(uint32_t node_id)> clock_agrees;
};

// A client write before the coordinator stamps it.
struct WriteSpec {
  enum class Kind : uint8_t {
    kPut,     // value (and expiry) registers
    kDelete,  // a tombstone with no expiry
    kExpire,  // the expiry register only
    // `record` as given, never stamped nor re-stamped: a counter's entry (design.md
    // "Counters"), which replicas merge by maximum, so a replica that holds more already
    // acknowledges it (its increment is in what that replica holds, or was reset after it).
    kMerge,
  };
  Kind kind = Kind::kPut;
  std::string value;           // kPut
  uint64_t ttl_ms = 0;         // kPut: expire ttl_ms after the coordinator's wall clock; 0 none
  bool keep_ttl = false;       // kPut: the value register only (ttl_ms ignored)
  uint64_t expires_at_ms = 0;  // kExpire: Unix ms; 0 = persist
  storage::Envelope record;    // kMerge
  // Wall-clock ms after which the client no longer waits (its request's deadlineMs; 0 = none).
  // Past it the write is never re-stamped (see Coordinator::Restamp).
  uint64_t deadline_ms = 0;
};

struct CoordinatorStats {
  uint64_t quorum_failures = 0;
  uint64_t read_repairs = 0;
  uint64_t hints_written = 0;
  uint64_t hints_not_written = 0;  // misses of writes that were not acknowledged: never hinted
  uint64_t stale_epoch_replies = 0;
  uint64_t redriven = 0;   // ops re-run under a newer map after a replica answered at a newer epoch
  uint64_t restamped = 0;  // writes re-stamped after a replica held a newer version
};

// A replica's answer to a replica write, as the coordinator counts it.
struct ReplicaWriteReply {
  Status status;
  uint64_t epoch = 0;       // the epoch the replica answered at (0: unknown)
  bool superseded = false;  // the replica holds a newer version; nothing was applied
  uint64_t ts = 0;          // the replica's HLC after the write (covers that newer version)
};

class Coordinator : public std::enable_shared_from_this<Coordinator> {
 public:
  using WriteDone = std::function<void(StatusOr<uint64_t>)>;  // the write's timestamp
  // The newest envelope (tombstones included), or NotFound if no replica has the key.
  using ReadDone = std::function<void(StatusOr<storage::Envelope>)>;

  // REQUIRES: the pointers outlive the coordinator and every callback it runs.
  Coordinator(CoordinatorOptions options, storage::Storage* storage, MapStore* maps,
              net::PeerPool* peers, HintStore* hints);

  // `value` absent means delete (a tombstone).
  void Write(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
             std::optional<std::string> value, net::Consistency consistency, WriteDone done);
  void Write(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key, WriteSpec spec,
             net::Consistency consistency, WriteDone done);
  void Read(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
            net::Consistency consistency, ReadDone done);

  // One write of a batch: Write()'s arguments.
  struct BatchWrite {
    uint64_t token = 0;
    std::string key;
    WriteSpec spec;
    WriteDone done;
  };
  // Write() for each of `writes` (MSET, pipelined SETs). Each stays its own write, with its own
  // timestamp, quorum, hints and re-stamping; what they share is this node's copy: one storage
  // batch (one WAL append) for every write this node is a replica of, in the order given, and
  // each peer's copies: one replicaWriteBatch frame.
  //
  // Group commit (design.md "Group commit"): batches that arrive while another thread is
  // writing one wait in a queue, and that thread then writes all of them as one batch, so
  // concurrent clients share a WAL append, a storage read and the frames to each peer. The
  // caller never blocks: its writes are queued and its `done` callbacks run on the thread that
  // writes them.
  void WriteMany(std::shared_ptr<const ClusterMap> map, std::vector<BatchWrite> writes,
                 net::Consistency consistency);

  // Blocks until no operation started under an epoch below `epoch` is in flight, or until
  // `deadline`. Returns false on timeout.
  bool WaitForOlderEpochs(uint64_t epoch, std::chrono::steady_clock::time_point deadline);

  CoordinatorStats stats() const;

  // Sends one replica write to `node` (used by hint replay and read repair too).
  void SendReplicaWrite(const ClusterNode& node, uint64_t epoch, uint64_t token,
                        const std::string& key, const storage::Envelope& envelope,
                        std::function<void(Status)> done);

 private:
  struct WriteOp;
  struct ReadOp;
  // Batches queued for group commit (WriteMany).
  struct PendingBatch {
    std::shared_ptr<const ClusterMap> map;
    net::Consistency consistency;
    std::vector<BatchWrite> writes;
  };

  // Writes `writes` now, as one batch (WriteMany without the queue).
  void WriteBatchNow(std::shared_ptr<const ClusterMap> map, std::vector<BatchWrite> writes,
                     net::Consistency consistency);
  // Writes the queued batches, round after round, until the queue is empty.
  void DrainPending();

  // Acks needed from a replica set of `set_size` nodes at consistency `c`.
  // `new_set`: the write's pending set (ClusterMap::WriteQuorum), whose W a params change sets.
  uint32_t Required(const ClusterMap& map, net::Consistency c, bool write, size_t set_size,
                    bool new_set) const;
  void BeginOp(uint64_t epoch);
  void EndOp(uint64_t epoch);
  void StartWrite(const std::shared_ptr<WriteOp>& op);
  // The op of a write, stamped now; null (and `done` called) if the clock cannot stamp.
  std::shared_ptr<WriteOp> MakeWriteOp(std::shared_ptr<const ClusterMap> map, uint64_t token,
                                       std::string key, WriteSpec spec,
                                       net::Consistency consistency, WriteDone done);
  // Sends `op`'s copies to its replicas other than this node; true if this node is a replica
  // too, whose copy the caller applies and hands to FinishLocalWrite.
  bool SendWrite(const std::shared_ptr<WriteOp>& op);
  // Sets `op`'s replica sets and quorums and counts it in flight; its replicas other than this
  // node in `remote`, whether this node is one in `local_replica`. False (and `done` called) if
  // the map places no replica.
  bool PrepareWrite(const std::shared_ptr<WriteOp>& op, std::vector<uint32_t>* remote,
                    bool* local_replica);
  // The copies of `ops` that `node` holds, in one replicaWriteBatch; each op counts its own
  // result (a node without the batch op gets one replicaWrite each).
  void SendReplicaWriteBatch(const ClusterNode& node, uint64_t epoch,
                             std::vector<std::shared_ptr<WriteOp>> ops);
  void FinishLocalWrite(const std::shared_ptr<WriteOp>& op, StatusOr<storage::WriteResult> local);
  void StartRead(const std::shared_ptr<ReadOp>& op);
  // The timeout of one replica write carrying `bytes` of key and value.
  std::chrono::milliseconds ReplicaWriteTimeout(size_t bytes) const;
  void SendReplicaWriteAt(const ClusterNode& node, uint64_t epoch, uint64_t token,
                          const std::string& key, const storage::Envelope& envelope,
                          std::function<void(ReplicaWriteReply)> done);
  void FinishReplicaWrite(const std::shared_ptr<WriteOp>& op, const ClusterNode& node,
                          ReplicaWriteReply reply);
  // Runs `op`'s write again with a timestamp above `newer_ts` (design.md "Re-stamping").
  void Restamp(const std::shared_ptr<WriteOp>& op, uint64_t newer_ts);
  void FinishReplicaRead(const std::shared_ptr<ReadOp>& op, const ClusterNode& node,
                         StatusOr<std::optional<storage::Envelope>> result, uint64_t reply_epoch);
  // A newer map than the op's, if this node has one now (after a reply carried it).
  std::shared_ptr<const ClusterMap> NewerMap(const ClusterMap& than) const;
  void RepairStale(const std::shared_ptr<ReadOp>& op);
  void NoteReply(const net::Response& reply);

  const CoordinatorOptions options_;
  storage::Storage* storage_;
  MapStore* maps_;
  net::PeerPool* peers_;
  HintStore* hints_;

  mutable common::Mutex mu_;
  std::condition_variable drained_;
  std::map<uint64_t, uint64_t> in_flight_by_epoch_ GUARDED_BY(mu_);
  CoordinatorStats stats_ GUARDED_BY(mu_);

  // Group commit's queue (its own lock: mu_ is taken inside a batch's write).
  common::Mutex pending_mu_;
  bool draining_ GUARDED_BY(pending_mu_) = false;
  std::vector<PendingBatch> pending_ GUARDED_BY(pending_mu_);
};

}  // namespace shardkv::cluster
