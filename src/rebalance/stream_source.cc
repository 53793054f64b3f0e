#include "rebalance/stream_source.h"

#include <algorithm>
#include <vector>

namespace shardkv::rebalance {
namespace {

net::ResponseBody Error(const Status& s) { return net::ErrorResponse{s.code(), s.message()}; }

constexpr auto kIdleRelease = std::chrono::seconds(60);
constexpr uint32_t kMaxEntries = 8192;
constexpr uint64_t kMaxBytes = uint64_t{8} << 20;

}  // namespace

StreamSource::~StreamSource() { Close(); }

void StreamSource::Close() {
  std::lock_guard lock(mu_);
  open_.clear();
}

net::ResponseBody StreamSource::Scan(const net::StreamScanRequest& r) {
  const TokenRange range{r.first, r.last};
  if (!range.Valid()) return Error(Status::InvalidArgument("stream range is empty"));
  auto map = maps_->Current();
  if (!map || !map->Holds(self_id_, r.first)) {
    return Error(Status::StaleEpoch("node " + std::to_string(self_id_) +
                                    " does not hold tokens from " + std::to_string(r.first)));
  }
  const auto now = std::chrono::steady_clock::now();
  const uint64_t max_age_ms = storage_->options().tombstone_grace_ms / 2;
  std::shared_ptr<StorageSnapshot> snapshot;
  bool renewed = false;
  {
    std::lock_guard lock(mu_);
    for (auto it = open_.begin(); it != open_.end();) {
      it = now - it->second.last_used > kIdleRelease ? open_.erase(it) : std::next(it);
    }
    Open& open = open_[r.stream_id];
    const uint64_t wall = storage_->options().physical_clock_ms
                              ? storage_->options().physical_clock_ms()
                              : HlcClock::WallClockMs();
    if (!open.snapshot || wall - open.snapshot->created_at_ms() > max_age_ms) {
      renewed = open.snapshot != nullptr;
      open.snapshot = storage_->NewSnapshot();
      if (!open.snapshot) return Error(Status::Unavailable("storage is closed"));
    }
    open.last_used = now;
    snapshot = open.snapshot;
  }
  ScanOptions options;
  options.snapshot = snapshot.get();
  options.cursor = r.cursor;
  options.max_entries = std::clamp<uint32_t>(r.max_entries, 1, kMaxEntries);
  options.max_bytes = std::clamp<uint64_t>(r.max_bytes, 1, kMaxBytes);
  options.include_tombstones = true;
  auto batch = storage_->Scan(range, options);
  if (!batch.ok()) return Error(batch.status());
  net::StreamScanResponse out;
  out.entries.reserve(batch->entries.size());
  for (RangeEntry& e : batch->entries) {
    out.entries.push_back({e.token, std::move(e.key), e.envelope.timestamp, e.envelope.node_id,
                           e.envelope.tombstone, std::move(e.envelope.value)});
  }
  out.cursor = std::move(batch->cursor);
  out.done = batch->done;
  out.snapshot_renewed = renewed;
  if (out.done) {
    std::lock_guard lock(mu_);
    open_.erase(r.stream_id);
  }
  return out;
}

net::ResponseBody StreamSource::Count(const net::CountRangesRequest& r) {
  net::CountRangesResponse out;
  auto snapshot = storage_->NewSnapshot();
  if (!snapshot) return Error(Status::Unavailable("storage is closed"));
  for (const net::TokenSpan& span : r.ranges) {
    net::RangeCount count;
    if (span.first > span.last) return Error(Status::InvalidArgument("empty range in count"));
    ScanOptions options;
    options.snapshot = snapshot.get();
    options.max_entries = 4096;
    for (;;) {
      auto batch = storage_->Scan({span.first, span.last}, options);
      if (!batch.ok()) return Error(batch.status());
      for (const RangeEntry& e : batch->entries) {
        if (e.envelope.tombstone) {
          ++count.tombstones;
        } else {
          ++count.live;
        }
        count.bytes += e.key.size() + e.envelope.value.size();
      }
      if (batch->done || batch->entries.empty()) break;
      options.cursor = std::move(batch->cursor);
    }
    out.counts.push_back(count);
  }
  return out;
}

}  // namespace shardkv::rebalance
