// StreamSink: the destination's side of a stream (design.md "Rebalancing: the transition protocol",
// streams).
//
// The driver asks the destination to run one stream task (a list of token ranges with the same
// preferred source, for this change) for up to a slice of time; the destination pulls batches from
// the preferred source, applies them with LWW (ApplyBatch, so joint writes that landed first are
// never overwritten by older streamed versions), and checkpoints its cursor and counts in `meta`
// after every batch. A restart of either side, or a new driver, continues from the checkpoint
// instead of starting over.
//
// If the preferred source is unreachable, the task switches to merging: it pulls the whole range
// from each of `merge_count` (RF - W + 1) other old replicas, so every write acknowledged by a
// W-quorum of the old replicas arrives. Counts stay deduplicated: a merged source adds only keys
// the destination did not have.
//
// Work runs on the sink's own threads (it blocks on the source); slow tasks never hold an I/O
// thread.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/rate_limiter.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

class StreamSource;

struct StreamSinkOptions {
  uint32_t self_id = 0;
  int threads = 4;
  uint32_t batch_entries = 2048;
  uint64_t batch_bytes = uint64_t{2} << 20;
  std::chrono::milliseconds source_timeout{3000};
  int nice = 10;  // CPU priority offset of the stream threads (0 = same as the I/O threads)
};

class StreamSink {
 public:
  StreamSink(StreamSinkOptions options, storage::Storage* storage, cluster::MapStore* maps,
             net::PeerPool* peers, StreamSource* local_source);
  ~StreamSink();

  void Start();
  void Stop();  // joins; queued work is refused

  using Done = std::function<void(net::ResponseBody)>;
  void HandleStream(net::StreamRangeRequest request, Done done);
  // The source side of a stream (a batch from a snapshot) also runs on these low-priority
  // threads rather than on an I/O thread.
  void HandleScan(net::StreamScanRequest request, Done done);
  // Counting scans the whole range, so it runs here too, not on an I/O thread.
  void HandleCount(net::CountRangesRequest request, Done done);

  uint64_t resumed_tasks() const;
  // Entries pulled from sources by this process (a restarted destination that resumed pulls
  // only what was left; one that started over would pull everything again).
  uint64_t entries_pulled() const { return entries_pulled_.load(); }

  // Rebuild: pulls every range `map` places on this node from RF - W + 1 of its other replicas
  // (fewer if fewer answer, but at least one), applying with LWW. Blocks; returns the
  // number of entries applied, or the first range that no replica could serve.
  StatusOr<uint64_t> Rebuild(const ClusterMap& map);

 private:
  void Worker(bool scans);
  void Enqueue(bool scan, std::function<net::ResponseBody()> job, Done done);
  net::ResponseBody Run(const net::StreamRangeRequest& request);
  StatusOr<net::StreamScanResponse> Pull(uint32_t source_id, const std::string& address,
                                         uint64_t stream_id,
                                         const std::vector<net::TokenSpan>& spans,
                                         const std::string& cursor);

  const StreamSinkOptions options_;
  storage::Storage* storage_;
  cluster::MapStore* maps_;
  net::PeerPool* peers_;
  StreamSource* local_source_;

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);       // tasks and counts
  std::deque<std::function<void()>> scan_queue_ GUARDED_BY(mu_);  // source-side scans
  std::set<std::pair<uint64_t, uint64_t>> seen_ GUARDED_BY(mu_);  // (change, task) run here
  uint64_t resumed_tasks_ GUARDED_BY(mu_) = 0;
  // Sources that failed recently: later tasks merge at once instead of each waiting out a
  // timeout on a dead or paused node.
  std::map<uint32_t, std::chrono::steady_clock::time_point> failed_sources_ GUARDED_BY(mu_);
  RateLimiter limiter_;  // every stream into this node (design.md "throttling")
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> entries_pulled_{0};
};

}  // namespace shardkv::rebalance
