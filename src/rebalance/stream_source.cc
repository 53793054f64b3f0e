#include "rebalance/stream_source.h"

#include <algorithm>
#include <vector>

#include "cluster/wire_envelope.h"

namespace shardkv::rebalance {
namespace {

constexpr auto kIdleRelease = std::chrono::seconds(60);
constexpr uint32_t kMaxEntries = 8192;
constexpr uint64_t kMaxBytes = uint64_t{8} << 20;

}  // namespace

StreamSource::~StreamSource() { Close(); }

void StreamSource::Close() {
  common::MutexLock lock(&mu_);
  open_.clear();
}

net::ResponseBody StreamSource::Scan(const net::StreamScanRequest& r) {
  if (refusal_) {
    if (Status refused = refusal_(); !refused.ok()) return net::ErrorBody(refused);
  }
  std::vector<net::TokenSpan> ranges = r.ranges;
  if (ranges.empty()) ranges.push_back({r.first, r.last});
  if (r.range_index >= ranges.size()) {
    return net::ErrorBody(Status::InvalidArgument("stream range index out of bounds"));
  }
  auto map = maps_->Current();
  for (size_t i = r.range_index; i < ranges.size(); ++i) {
    if (!TokenRange{ranges[i].first, ranges[i].last}.Valid()) {
      return net::ErrorBody(Status::InvalidArgument("stream range is empty"));
    }
    if (!map || !map->Holds(self_id_, ranges[i].first)) {
      return net::ErrorBody(Status::StaleEpoch("node " + std::to_string(self_id_) +
                                               " does not hold tokens from " +
                                               std::to_string(ranges[i].first)));
    }
  }
  const auto now = std::chrono::steady_clock::now();
  const uint64_t max_age_ms = storage_->options().tombstone_grace_ms / 2;
  std::shared_ptr<storage::StorageSnapshot> snapshot;
  bool renewed = false;
  {
    common::MutexLock lock(&mu_);
    for (auto it = open_.begin(); it != open_.end();) {
      it = now - it->second.last_used > kIdleRelease ? open_.erase(it) : std::next(it);
    }
    Open& open = open_[r.stream_id];
    const uint64_t wall = storage_->options().physical_clock_ms
                              ? storage_->options().physical_clock_ms()
                              : common::HlcClock::WallClockMs();
    if (!open.snapshot || wall - open.snapshot->created_at_ms() > max_age_ms) {
      renewed = open.snapshot != nullptr;
      open.snapshot = storage_->NewSnapshot();
      if (!open.snapshot) return net::ErrorBody(Status::Unavailable("storage is closed"));
    }
    open.last_used = now;
    snapshot = open.snapshot;
  }
  const size_t max_entries = std::clamp<uint32_t>(r.max_entries, 1, kMaxEntries);
  const uint64_t max_bytes = std::clamp<uint64_t>(r.max_bytes, 1, kMaxBytes);
  net::StreamScanResponse out;
  out.snapshot_renewed = renewed;
  out.range_index = r.range_index;
  out.cursor = r.cursor;
  uint64_t bytes = 0;
  // Fill one batch across as many ranges as it takes: a task of thousands of tiny ranges (many
  // vnodes) must not cost a round trip per range.
  while (out.entries.size() < max_entries && bytes < max_bytes) {
    const net::TokenSpan& span = ranges[out.range_index];
    storage::ScanOptions options;
    options.snapshot = snapshot.get();
    options.cursor = out.cursor;
    options.max_entries = max_entries - out.entries.size();
    options.max_bytes = max_bytes - bytes;
    options.include_tombstones = true;
    auto batch = storage_->Scan({span.first, span.last}, options);
    if (!batch.ok()) return net::ErrorBody(batch.status());
    for (storage::RangeEntry& e : batch->entries) {
      bytes += e.key.size() + e.envelope.value.size();
      net::ExpiryRegister expiry = cluster::ExpiryToWire(e.envelope);
      out.entries.push_back({e.token, std::move(e.key), e.envelope.timestamp, e.envelope.node_id,
                             e.envelope.tombstone, std::move(e.envelope.value), expiry});
    }
    out.cursor = std::move(batch->cursor);
    if (!batch->done) break;
    if (out.range_index + 1 == ranges.size()) {
      out.done = true;
      break;
    }
    ++out.range_index;
    out.cursor.clear();
  }
  if (out.done) {
    common::MutexLock lock(&mu_);
    open_.erase(r.stream_id);
  }
  return out;
}

net::ResponseBody StreamSource::Count(const net::CountRangesRequest& r) {
  net::CountRangesResponse out;
  auto snapshot = storage_->NewSnapshot();
  if (!snapshot) return net::ErrorBody(Status::Unavailable("storage is closed"));
  for (const net::TokenSpan& span : r.ranges) {
    net::RangeCount count;
    if (span.first > span.last)
      return net::ErrorBody(Status::InvalidArgument("empty range in count"));
    storage::ScanOptions options;
    options.snapshot = snapshot.get();
    options.max_entries = 4096;
    for (;;) {
      auto batch = storage_->Scan({span.first, span.last}, options);
      if (!batch.ok()) return net::ErrorBody(batch.status());
      for (const storage::RangeEntry& e : batch->entries) {
        if (!e.envelope.has_value() && !e.envelope.counter_active() && !e.envelope.hash_live() &&
            !e.envelope.set_live()) {  // tombstones, expiry-only
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
