#include "rebalance/stream_sink.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "cluster/wire_envelope.h"
#include "clustermap/cluster_map_builder.h"
#include "common/hlc.h"
#include "rebalance/plan.h"
#include "rebalance/stream_checkpoint.h"
#include "rebalance/stream_source.h"
#include "shardkv/change.h"
#include "shardkv/hash.h"

namespace shardkv::rebalance {
namespace {

// A scan request carries at most this many of a task's ranges (the window from the current one):
// a task may have hundreds of thousands, and resending all of them with every batch would cost
// more than the data.
constexpr size_t kScanWindow = 1024;

}  // namespace

StreamSink::StreamSink(StreamSinkOptions options, storage::Storage* storage,
                       cluster::MapStore* maps, net::PeerPool* peers, StreamSource* local_source)
    : options_(options),
      storage_(storage),
      maps_(maps),
      peers_(peers),
      local_source_(local_source) {}

StreamSink::~StreamSink() { Stop(); }

void StreamSink::Start() {
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { Worker(false); });
  // Scans get their own threads: a node that is both a destination and a source (merges,
  // rebuilds, scale-in) must never have every thread waiting on a peer's scan while the peer's
  // scans wait for a free thread here.
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { Worker(true); });
}

void StreamSink::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

uint64_t StreamSink::resumed_tasks() const {
  common::MutexLock lock(&mu_);
  return resumed_tasks_;
}

void StreamSink::Worker(bool scans) {
  // Streams are background work: at a lower CPU priority than the I/O threads serving clients,
  // so on a busy machine a migration slows down before client requests do.
  if (options_.nice > 0) {
    static_cast<void>(setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), options_.nice));
  }
  for (;;) {
    std::function<void()> job;
    {
      common::MutexLock lock(&mu_);
      auto& queue = scans ? scan_queue_ : queue_;
      while (!stopping_ && queue.empty()) lock.Wait(wake_);
      if (stopping_) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    job();
  }
}

void StreamSink::Enqueue(bool scan, std::function<net::ResponseBody()> job, Done done) {
  common::MutexLock lock(&mu_);
  if (stopping_) {
    lock.Unlock();
    return done(net::ErrorBody(Status::Unavailable("node is shutting down")));
  }
  (scan ? scan_queue_ : queue_).push_back([job = std::move(job), done = std::move(done)] {
    done(job());
  });
  wake_.notify_all();
}

void StreamSink::HandleStream(net::StreamRangeRequest request, Done done) {
  Enqueue(
      false, [this, request = std::move(request)] { return Run(request); }, std::move(done));
}

void StreamSink::HandleScan(net::StreamScanRequest request, Done done) {
  Enqueue(
      true, [this, request = std::move(request)] { return local_source_->Scan(request); },
      std::move(done));
}

void StreamSink::HandleCount(net::CountRangesRequest request, Done done) {
  Enqueue(
      false, [this, request = std::move(request)] { return local_source_->Count(request); },
      std::move(done));
}

StatusOr<net::StreamScanResponse> StreamSink::Pull(uint32_t source_id, const std::string& address,
                                                   uint64_t stream_id,
                                                   const std::vector<net::TokenSpan>& spans,
                                                   const std::string& cursor) {
  net::StreamScanRequest scan;
  scan.stream_id = stream_id;
  if (spans.size() == 1) {
    scan.first = spans[0].first;
    scan.last = spans[0].last;
  } else {
    scan.ranges = spans;
  }
  scan.cursor = cursor;
  scan.max_entries = options_.batch_entries;
  scan.max_bytes = options_.batch_bytes;
  net::ResponseBody body;
  if (source_id == options_.self_id) {
    body = local_source_->Scan(scan);
  } else {
    net::Request req;
    auto map = maps_->Current();
    req.epoch = map ? map->epoch() : 0;
    req.cluster_id = map ? map->cluster_id() : 0;
    req.body = std::move(scan);
    auto reply = peers_->CallSync(address, std::move(req), options_.source_timeout);
    if (!reply.ok()) return reply.status();
    body = std::move(reply->body);
  }
  if (auto* e = std::get_if<net::ErrorResponse>(&body)) return e->ToStatus();
  auto* out = std::get_if<net::StreamScanResponse>(&body);
  if (out == nullptr) return Status::Corruption("unexpected reply to a stream scan");
  return std::move(*out);
}

net::ResponseBody StreamSink::Run(const net::StreamRangeRequest& r) {
  auto map = maps_->Current();
  if (!map || !map->has_pending()) {
    return net::ErrorBody(Status::FailedPrecondition("no change is pending at node " +
                                                     std::to_string(options_.self_id)));
  }
  auto record = clustermap::RecordOf(*map);
  if (!record.ok() || record->change_id != r.change_id) {
    return net::ErrorBody(Status::FailedPrecondition("change " + std::to_string(r.change_id) +
                                                     " is not the pending change at node " +
                                                     std::to_string(options_.self_id)));
  }
  if (r.source_ids.empty() || r.source_ids.size() != r.source_addresses.size()) {
    return net::ErrorBody(Status::InvalidArgument("stream task without sources"));
  }
  std::vector<net::TokenSpan> ranges = r.ranges;
  if (ranges.empty()) ranges.push_back({r.first, r.last});
  const std::string key = StreamCheckpoint::Key(r.change_id, r.task_id);
  StreamCheckpoint ck;
  bool found = false;
  if (auto stored = storage_->GetAux(storage::AuxColumn::kMeta, key); stored.ok()) {
    auto decoded = StreamCheckpoint::Decode(*stored);
    // A newer node's checkpoint: continuing it could misread it and starting over would lose
    // what it knows, so the task waits for this node's upgrade. A corrupt one only costs
    // re-applying batches (LWW makes that a no-op), as v0.1.0 did.
    if (decoded.status().code() == Status::Code::kNotSupported) {
      return net::ErrorBody(
          decoded.status().WithContext("stream task " + std::to_string(r.task_id)));
    }
    if (decoded.ok()) {
      ck = std::move(*decoded);
      found = true;
    } else {
      spdlog::warn("stream task {}: {}; starting the task over", r.task_id,
                   decoded.status().ToString());
    }
  }
  // The checkpoint was there when this call started (the driver decides whether that means the
  // task continued after a restart or takeover).
  const bool resumed = found;
  {
    common::MutexLock lock(&mu_);
    if (seen_.insert({r.change_id, r.task_id}).second && found && !ck.done) ++resumed_tasks_;
  }
  auto progress = [&](const StreamCheckpoint& c) {
    net::StreamRangeResponse out;
    out.done = c.done;
    out.copies = c.copies;
    out.tombstones = c.tombstones;
    out.bytes = c.bytes;
    out.resumed = resumed;
    out.source_id = c.phase == 0 ? r.source_ids[0] : 0;
    out.sources_merged = c.phase == 0 ? 0 : static_cast<uint32_t>(c.merge_ids.size());
    out.ranges_done = c.done ? ranges.size() : c.phase == 0 ? c.range_index : 0;
    out.copies_during_change = c.copies_during_change;
    return out;
  };
  if (ck.done) return progress(ck);

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(r.slice_ms);
  // The request carries the destination's whole rate; this node's one limiter shares it among
  // every task streaming here (rate_limiter.h).
  limiter_.SetRate(r.rate_bytes_per_s);
  while (!ck.done) {
    // Within the rate before pulling the next batch; a wait past this slice ends the slice (the
    // driver calls again), so a low rate never turns into a quick succession of empty calls.
    if (const auto ready = limiter_.Ready(); ready > std::chrono::steady_clock::now()) {
      std::this_thread::sleep_until(std::min(ready, deadline));
      if (limiter_.Ready() > std::chrono::steady_clock::now()) break;
    }
    uint32_t source;
    std::string address;
    if (ck.phase == 0) {
      source = r.source_ids[0];
      address = r.source_addresses[0];
    } else {
      source = ck.merge_ids[ck.merge_index];
      address = r.source_addresses[static_cast<size_t>(
          std::find(r.source_ids.begin(), r.source_ids.end(), source) - r.source_ids.begin())];
    }
    // One snapshot per (change, task, source) at the source.
    const uint64_t stream_id = hash::Xxh3(std::to_string(r.change_id) + "/" +
                                          std::to_string(r.task_id) + "/" + std::to_string(source));
    StatusOr<net::StreamScanResponse> batch = Status::Unavailable("recently unreachable");
    bool skip = false;
    if (ck.phase == 0) {
      common::MutexLock lock(&mu_);
      auto it = failed_sources_.find(source);
      skip = it != failed_sources_.end() &&
             std::chrono::steady_clock::now() - it->second < std::chrono::seconds(10);
    }
    if (ck.range_index >= ranges.size()) ck.range_index = 0;  // a checkpoint of another plan
    const size_t base = ck.range_index;
    const size_t window_end = std::min(ranges.size(), base + kScanWindow);
    const std::vector<net::TokenSpan> window(ranges.begin() + static_cast<long>(base),
                                             ranges.begin() + static_cast<long>(window_end));
    // No address: the driver left this source out (not in the map, or it needs repair).
    if (address.empty() && source != options_.self_id) {
      batch = Status::FailedPrecondition("node " + std::to_string(source) +
                                         " is no stream source for this change");
    } else if (!skip) {
      batch = Pull(source, address, stream_id, window, ck.cursor);
    }
    if (!batch.ok() && !skip && ck.phase == 0 &&
        batch.status().code() != Status::Code::kStaleEpoch) {
      common::MutexLock lock(&mu_);
      failed_sources_[source] = std::chrono::steady_clock::now();
    }
    if (!batch.ok()) {
      if (ck.phase == 1) {
        return net::ErrorBody(
            batch.status().WithContext("merging from node " + std::to_string(source)));
      }
      // The preferred source is unreachable: merge from RF - W + 1 other old replicas.
      spdlog::warn("stream task {}: source node {} failed ({}); merging from {} old replicas",
                   r.task_id, source, batch.status().ToString(), r.merge_count);
      ck.phase = 1;
      ck.cursor.clear();
      ck.range_index = 0;
      ck.merge_index = 0;
      ck.merge_ids.clear();
      for (size_t i = 1; i < r.source_ids.size() && ck.merge_ids.size() < r.merge_count; ++i) {
        if (r.source_addresses[i].empty() && r.source_ids[i] != options_.self_id) continue;
        ck.merge_ids.push_back(r.source_ids[i]);
      }
      if (ck.merge_ids.size() < r.merge_count) {
        return net::ErrorBody(
            Status::Unavailable("source node " + std::to_string(source) +
                                " is unreachable and too few other old replicas exist "
                                "to merge from"));
      }
      continue;
    }
    entries_pulled_ += batch->entries.size();
    std::vector<storage::RangeEntry> entries;
    entries.reserve(batch->entries.size());
    uint64_t batch_bytes = 0, live = 0, tomb = 0, during = 0;
    for (net::StreamEntry& e : batch->entries) {
      batch_bytes += e.key.size() + e.value.size();
      const bool holds_value = !e.tombstone && !e.expiry.value_absent;
      (holds_value ? live : tomb) += 1;
      if (holds_value && common::HlcClock::PhysicalMs(e.ts) >= record->started_ms) ++during;
      entries.push_back(
          {e.token, std::move(e.key),
           cluster::EnvelopeFromWire(e.ts, e.node_id, e.tombstone, std::move(e.value), e.expiry)});
    }
    auto applied = storage_->ApplyBatch(entries);
    if (!applied.ok())
      return net::ErrorBody(applied.status().WithContext("applying a stream batch"));
    if (ck.phase == 0) {
      ck.copies += live;
      ck.tombstones += tomb;
      ck.bytes += batch_bytes;
      ck.copies_during_change += during;
    } else {
      // Merged sources overlap: count only keys this destination did not have yet.
      ck.copies += applied->created - applied->created_tombstones;
      ck.tombstones += applied->created_tombstones;
      ck.bytes += applied->created == 0 ? 0 : batch_bytes * applied->created / entries.size();
    }
    ck.cursor = batch->cursor;
    ck.range_index = base + std::min<size_t>(batch->range_index, window.size() - 1);
    if (batch->done && window_end < ranges.size()) {
      ck.range_index = window_end;  // the next window, same source and snapshot
      ck.cursor.clear();
    } else if (batch->done) {
      if (ck.phase == 1 && ck.merge_index + 1 < ck.merge_ids.size()) {
        ++ck.merge_index;
        ck.cursor.clear();
        ck.range_index = 0;
      } else {
        ck.done = true;
      }
    }
    // Not fsynced: the WAL still has it for a process crash, and a checkpoint lost to a power
    // failure only means re-applying a batch (LWW makes that a no-op).
    Status s = storage_->PutAux(storage::AuxColumn::kMeta, key, ck.Encode(), /*sync=*/false);
    if (!s.ok()) return net::ErrorBody(s.WithContext("checkpointing a stream"));
    limiter_.Take(batch_bytes, std::chrono::steady_clock::now());
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  return progress(ck);
}

StatusOr<uint64_t> StreamSink::Rebuild(const ClusterMap& map) {
  const uint32_t rf = map.EffectiveReplicas();
  const uint32_t wanted = rf - std::min(map.params().write_quorum, rf) + 1;
  uint64_t applied_total = 0;
  size_t done_ranges = 0;
  const auto ranges = AllRanges(map);
  for (const MovingRange& r : ranges) {
    std::vector<uint32_t> holders = r.old_set;
    for (uint32_t id : r.new_set) {
      if (std::find(holders.begin(), holders.end(), id) == holders.end()) holders.push_back(id);
    }
    if (std::find(holders.begin(), holders.end(), options_.self_id) == holders.end()) continue;
    ++done_ranges;
    uint32_t merged = 0;
    std::string errors;
    for (uint32_t id : holders) {
      if (id == options_.self_id || merged >= wanted) continue;
      const ClusterNode* node = map.FindNode(id);
      if (node == nullptr) continue;
      const uint64_t stream_id = hash::Xxh3("rebuild/" + std::to_string(options_.self_id) + "/" +
                                            std::to_string(r.range.first));
      std::string cursor;
      Status failed;
      for (;;) {
        auto batch = Pull(id, node->address, stream_id, {{r.range.first, r.range.last}}, cursor);
        if (!batch.ok()) {
          failed = batch.status();
          break;
        }
        std::vector<storage::RangeEntry> entries;
        for (net::StreamEntry& e : batch->entries) {
          entries.push_back({e.token, std::move(e.key),
                             cluster::EnvelopeFromWire(e.ts, e.node_id, e.tombstone,
                                                       std::move(e.value), e.expiry)});
        }
        auto applied = storage_->ApplyBatch(entries);
        if (!applied.ok()) return applied.status().WithContext("rebuild");
        applied_total += applied->applied;
        if (batch->done) break;
        cursor = batch->cursor;
      }
      if (failed.ok()) {
        ++merged;
      } else {
        errors += (errors.empty() ? "" : "; ") + failed.ToString();
      }
    }
    if (merged == 0 && holders.size() > 1) {
      return Status::Unavailable("rebuild: no replica served tokens " +
                                 std::to_string(r.range.first) + ".." +
                                 std::to_string(r.range.last) + ": " + errors);
    }
  }
  spdlog::info("rebuild: {} ranges pulled, {} entries applied", done_ranges, applied_total);
  return applied_total;
}

}  // namespace shardkv::rebalance
