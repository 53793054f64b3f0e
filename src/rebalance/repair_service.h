// RepairService: a node's anti-entropy endpoint (design.md "Anti-entropy"). It serves the
// `antiEntropy` requests: tree queries and pushed records (TreeSource) from the nodes that
// compare ranges, and the admin's repair command, which this node runs as the comparing node
// (RangeRepair) over the ranges it holds, in token order:
//
// - scope: every range it holds (`all`, `shardkv repair --node`), or only those it is the first
//   replica of (a whole-cluster repair asks every node so, so each range is compared once);
// - a range whose replica set changes in a pending membership change (a range in transition) is
//   skipped and counted: its new replicas are still being streamed, and comparing against a set
//   that does not hold it yet would push records to a node that will drop them, or miss one;
// - a command runs for about its budget, then answers where it got to (RepairReport::next), so
//   the admin shows progress and no request waits long.
//
// - a replica that this node knows needs repair (`replica_refusal`: a mark this node or a peer
//   holds, which the replica itself may not have learned yet) is left out of the comparison and
//   the range counts as failed, as when it refuses itself: its data may hold values whose deletes
//   the others already collected, and a merge would spread them.
//
// - while this node itself needs repair (`refusal` non-OK), every command and background step
//   brings it back instead (catch-up, design.md "Needs repair"): the scope is every range it
//   holds, whatever the command asked, and each is compared with all its other replicas (its own
//   tree and leaves read locally: its TreeSource and StreamSource still refuse everyone else),
//   LWW both ways. A range with a replica that may have purged a tombstone this node lacks
//   (`purge_refusal`) is not compared at all and fails, saying to rebuild. Once every range it
//   holds under the current map was compared that way, none failing, `record_repaired` gets the
//   earliest of those comparisons' starts, which clears the mark (RepairState::RecordRepair).
//
// - a range repaired whole (not clipped by the command's bounds) against every replica of its
//   set, none failing or refused, advances the GC horizon of the range on every replica
//   (gc_horizon.h), to its start less the largest clock offset.
//
// Background anti-entropy (RepairScheduler) runs the same comparison a range at a time through
// RunBackgroundStep, on its own thread; the figures (AddCounters) count both.
//
// Work runs on the service's own threads at a lower CPU priority, never on I/O threads: a
// command on one (one command at a time per node), tree queries and pushes on two others, so a
// comparing node never waits for a peer that waits for it, and tree releases on a fourth, so a
// comparing node's release does not wait behind other nodes' tree builds.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/gc_horizon.h"
#include "rebalance/range_repair.h"
#include "rebalance/stream_source.h"
#include "rebalance/tree_source.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

struct RepairServiceDeps {
  uint32_t self_id = 0;
  storage::Storage* storage = nullptr;
  cluster::MapStore* maps = nullptr;
  net::PeerPool* peers = nullptr;
  StreamSource* stream_source = nullptr;
  // Non-OK while this node must not take part (it needs repair: cluster/repair_state.h).
  std::function<Status()> refusal;
  // Non-OK while replica `id` must not be compared (it needs repair, as this node knows).
  std::function<Status(uint32_t id)> replica_refusal;
  int nice = 10;
  // The tombstone GC rule (gc_horizon.h): a range repaired against every replica of its set,
  // none failing, records its start less max_clock_offset_ms here and on the other replicas.
  // Null: nothing recorded.
  GcHorizon* horizons = nullptr;
  uint64_t max_clock_offset_ms = 500;
  std::function<uint64_t()> wall_ms;  // Unix ms
  // Catch-up (above): non-OK while this node, needing repair, must not merge a range with
  // replica `id`, this node holding every write of the range older than `synced_ms` (its GC
  // horizon there: RepairState::PurgeRefusal); null: never refused.
  std::function<Status(uint32_t id, uint64_t synced_ms)> purge_refusal;
  // Every range this node holds was compared since `started_ms` (RepairState::RecordRepair).
  std::function<Status(uint64_t started_ms)> record_repaired;
  // Asks every peer for its needs-repair marks (RepairState::PollPeers) at the first slice of a
  // command, so that a command right after another node's catch-up sees its mark cleared, and a
  // node marked while it was cut off knows it before it compares anything. Null: not asked.
  std::function<size_t()> refresh_marks;
};

// One step of background anti-entropy (RepairService::RunBackgroundStep).
struct BackgroundStep {
  Status refused;            // non-OK: this node takes no part now (needs repair, no map)
  net::RepairReport report;  // as a repair command's over the ranges this node drives
  uint64_t own_keys = 0;     // this node's keys in the ranges compared: the throttle's measure
};

class RepairService {
 public:
  explicit RepairService(RepairServiceDeps deps);
  ~RepairService();

  void Start();
  void Stop();  // joins; queued work is refused

  using Done = std::function<void(net::ResponseBody)>;
  void Handle(net::AntiEntropyRequest request, Done done);

  // The repair command itself, on the calling thread (tests; Handle queues it).
  net::RepairReport RunCommand(const net::RepairCommand& command);

  // Background anti-entropy, on the calling thread: compares the ranges this node drives (is the
  // first replica of, as a whole-cluster repair asks) from token `from` on, for about `budget`
  // and at least one range. report.next is where to continue (report.done: the last one was).
  BackgroundStep RunBackgroundStep(uint64_t from, std::chrono::milliseconds budget);
  // How many ranges this node drives under its current map (0 without one): the scheduler
  // spreads a pass over its period by this.
  size_t RangesDriven() const;
  // How many of those lie wholly before token `token`: a pass resumed there has visited them.
  size_t RangesDrivenBefore(uint64_t token) const;
  // Whether this node needs repair now, so that its steps are its catch-up (every range it holds).
  bool CatchingUp() const;

  // Counters repair_ranges_*, repair_keys_*, repair_tree_bytes (shardkv/stats.h): every range
  // this node compared, by command or in the background, and every record repair wrote to it.
  void AddCounters(std::map<std::string, int64_t>* counters) const;

 private:
  struct Figures {
    std::atomic<uint64_t> ranges_compared{0}, ranges_differed{0}, ranges_failed{0},
        ranges_skipped{0}, keys_in{0}, keys_out{0}, tree_bytes{0};
  };

  // A range this node compared with all its replicas while catching up (by first token).
  struct CaughtUp {
    uint64_t last = 0;
    std::vector<uint32_t> replicas;
    uint64_t started_ms = 0;
  };

  net::RepairReport Run(const net::RepairCommand& command, bool background, uint64_t* own_keys);
  // Clears the mark if every range of `map` this node holds is caught up.
  void MaybeCaughtUp(const ClusterMap& map);

  // The service's queues, each with its own thread(s).
  enum class Queue { kCommands, kServes, kReleases };
  void Worker(Queue queue);
  void Enqueue(Queue queue, std::function<net::ResponseBody()> job, Done done);
  std::deque<std::function<void()>>& QueueOf(Queue queue) REQUIRES(mu_);

  const RepairServiceDeps d_;
  TreeSource trees_;
  // This node's own tree and leaves for its comparisons: unlike trees_ and the node's stream
  // source they refuse nothing, as a catch-up reads them while the node refuses everyone else.
  TreeSource own_trees_;
  StreamSource own_source_;
  RangeRepair ranges_;
  common::Mutex catch_up_mu_;
  std::map<uint64_t, CaughtUp> caught_up_ GUARDED_BY(catch_up_mu_);
  Figures figures_;
  common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> commands_ GUARDED_BY(mu_);
  std::deque<std::function<void()>> serves_ GUARDED_BY(mu_);
  // Tree session releases (and the GC horizons they carry): cheap, and a comparing node waits
  // for them, so they do not queue behind the tree builds of serves_.
  std::deque<std::function<void()>> releases_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace shardkv::rebalance
