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
// Work runs on the service's own threads at a lower CPU priority, never on I/O threads: a
// command on one (one command at a time per node), tree queries and pushes on two others, so a
// comparing node never waits for a peer that waits for it.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
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
  int nice = 10;
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

 private:
  void Worker(bool commands);
  void Enqueue(bool command, std::function<net::ResponseBody()> job, Done done);

  const RepairServiceDeps d_;
  TreeSource trees_;
  RangeRepair ranges_;
  common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> commands_ GUARDED_BY(mu_);
  std::deque<std::function<void()>> serves_ GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace shardkv::rebalance
