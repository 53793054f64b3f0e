// Encoding and decoding of the rebalancer's stream ops (streamScan, streamRange, countRanges),
// called from the request and response fill/read functions (codec_internal.h), so framing,
// limits and exception handling stay in codec.cc.
#include <capnp/list.h>

#include <cstdint>
#include <string>
#include <vector>

#include "net/codec_internal.h"

namespace shardkv::net::codec_internal {
namespace {

void FillSpans(const std::vector<TokenSpan>& spans, capnp::List<wire::TokenSpan>::Builder list) {
  for (unsigned i = 0; i < spans.size(); ++i) {
    list[i].setFirst(spans[i].first);
    list[i].setLast(spans[i].last);
  }
}

std::vector<TokenSpan> ReadSpans(capnp::List<wire::TokenSpan>::Reader list) {
  std::vector<TokenSpan> out;
  out.reserve(list.size());
  for (auto span : list) out.push_back({span.getFirst(), span.getLast()});
  return out;
}

}  // namespace

// ---- Requests ----

void FillStreamScan(const StreamScanRequest& s, wire::StreamScan::Builder b) {
  b.setStreamId(s.stream_id);
  b.setFirst(s.first);
  b.setLast(s.last);
  if (!s.cursor.empty()) b.setCursor(AsData(s.cursor));
  b.setMaxEntries(s.max_entries);
  b.setMaxBytes(s.max_bytes);
  if (!s.ranges.empty()) FillSpans(s.ranges, b.initRanges(static_cast<unsigned>(s.ranges.size())));
  b.setRangeIndex(s.range_index);
}

StreamScanRequest ReadStreamScan(wire::StreamScan::Reader r) {
  StreamScanRequest s;
  s.stream_id = r.getStreamId();
  s.first = r.getFirst();
  s.last = r.getLast();
  s.cursor = ToString(r.getCursor());
  s.max_entries = r.getMaxEntries();
  s.max_bytes = r.getMaxBytes();
  s.ranges = ReadSpans(r.getRanges());
  s.range_index = r.getRangeIndex();
  return s;
}

void FillStreamRange(const StreamRangeRequest& s, wire::StreamRange::Builder b) {
  b.setChangeId(s.change_id);
  b.setTaskId(s.task_id);
  b.setFirst(s.first);
  b.setLast(s.last);
  auto ids = b.initSourceIds(static_cast<unsigned>(s.source_ids.size()));
  for (unsigned i = 0; i < s.source_ids.size(); ++i) ids.set(i, s.source_ids[i]);
  auto addresses = b.initSourceAddresses(static_cast<unsigned>(s.source_addresses.size()));
  for (unsigned i = 0; i < s.source_addresses.size(); ++i) {
    addresses.set(i, AsText(s.source_addresses[i]));
  }
  b.setMergeCount(s.merge_count);
  b.setRateBytesPerS(s.rate_bytes_per_s);
  b.setSliceMs(s.slice_ms);
  if (!s.ranges.empty()) FillSpans(s.ranges, b.initRanges(static_cast<unsigned>(s.ranges.size())));
}

// The two source lists are passed through as sent, even if their lengths differ: pairing them
// up is the stream task's job, which can answer InvalidArgument for that request alone.
StreamRangeRequest ReadStreamRange(wire::StreamRange::Reader r) {
  StreamRangeRequest s;
  s.change_id = r.getChangeId();
  s.task_id = r.getTaskId();
  s.first = r.getFirst();
  s.last = r.getLast();
  auto ids = r.getSourceIds();
  s.source_ids.reserve(ids.size());
  for (uint32_t id : ids) s.source_ids.push_back(id);
  auto addresses = r.getSourceAddresses();
  s.source_addresses.reserve(addresses.size());
  for (auto a : addresses) s.source_addresses.push_back(ToString(a));
  s.merge_count = r.getMergeCount();
  s.rate_bytes_per_s = r.getRateBytesPerS();
  s.slice_ms = r.getSliceMs();
  s.ranges = ReadSpans(r.getRanges());
  return s;
}

void FillCountRanges(const CountRangesRequest& c, capnp::List<wire::TokenSpan>::Builder list) {
  for (unsigned i = 0; i < c.ranges.size(); ++i) {
    list[i].setFirst(c.ranges[i].first);
    list[i].setLast(c.ranges[i].last);
  }
}

CountRangesRequest ReadCountRanges(capnp::List<wire::TokenSpan>::Reader list) {
  CountRangesRequest c;
  c.ranges.reserve(list.size());
  for (auto span : list) c.ranges.push_back(TokenSpan{span.getFirst(), span.getLast()});
  return c;
}

// ---- Responses ----

void FillStreamScan(const StreamScanResponse& s, wire::Response::Body::StreamScan::Builder b) {
  auto list = b.initEntries(static_cast<unsigned>(s.entries.size()));
  for (unsigned i = 0; i < s.entries.size(); ++i) {
    FillRecord(s.entries[i], list[i]);
  }
  if (!s.cursor.empty()) b.setCursor(AsData(s.cursor));
  b.setDone(s.done);
  b.setSnapshotRenewed(s.snapshot_renewed);
  b.setRangeIndex(s.range_index);
}

StreamScanResponse ReadStreamScan(wire::Response::Body::StreamScan::Reader r) {
  StreamScanResponse s;
  auto list = r.getEntries();
  s.entries.reserve(list.size());
  for (auto e : list) {
    ReadRecord(e, &s.entries.emplace_back());
  }
  s.cursor = ToString(r.getCursor());
  s.done = r.getDone();
  s.snapshot_renewed = r.getSnapshotRenewed();
  s.range_index = r.getRangeIndex();
  return s;
}

void FillStreamRange(const StreamRangeResponse& s, wire::Response::Body::StreamRange::Builder b) {
  b.setDone(s.done);
  b.setCopies(s.copies);
  b.setTombstones(s.tombstones);
  b.setBytes(s.bytes);
  b.setResumed(s.resumed);
  b.setSourceId(s.source_id);
  b.setSourcesMerged(s.sources_merged);
  b.setRangesDone(s.ranges_done);
  b.setCopiesDuringChange(s.copies_during_change);
}

StreamRangeResponse ReadStreamRange(wire::Response::Body::StreamRange::Reader r) {
  StreamRangeResponse s;
  s.done = r.getDone();
  s.copies = r.getCopies();
  s.tombstones = r.getTombstones();
  s.bytes = r.getBytes();
  s.resumed = r.getResumed();
  s.source_id = r.getSourceId();
  s.sources_merged = r.getSourcesMerged();
  s.ranges_done = r.getRangesDone();
  s.copies_during_change = r.getCopiesDuringChange();
  return s;
}

void FillCountRanges(const CountRangesResponse& c, capnp::List<wire::RangeCount>::Builder list) {
  for (unsigned i = 0; i < c.counts.size(); ++i) {
    list[i].setLive(c.counts[i].live);
    list[i].setTombstones(c.counts[i].tombstones);
    list[i].setBytes(c.counts[i].bytes);
  }
}

CountRangesResponse ReadCountRanges(capnp::List<wire::RangeCount>::Reader list) {
  CountRangesResponse c;
  c.counts.reserve(list.size());
  for (auto n : list) {
    c.counts.push_back(RangeCount{n.getLive(), n.getTombstones(), n.getBytes()});
  }
  return c;
}

}  // namespace shardkv::net::codec_internal
