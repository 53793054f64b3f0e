// Encoding and decoding of the scan ops (design.md "Scans"): the client's scan and the
// coordinator's replicaScan, requests and responses.
#include <capnp/message.h>

#include <string>
#include <utility>
#include <vector>

#include "net/codec_internal.h"

namespace shardkv::net::codec_internal {

void FillScan(const ScanRequest& s, wire::Scan::Builder b) {
  b.setCursor(s.cursor);
  b.setCount(s.count);
  if (!s.match.empty()) b.setMatch(AsData(s.match));
  b.setTyped(s.typed);
  b.setType(static_cast<uint8_t>(s.type));
}

ScanRequest ReadScan(wire::Scan::Reader r) {
  return ScanRequest{r.getCursor(), r.getCount(), ToString(r.getMatch()), r.getTyped(),
                     KindFromWire(r.getType())};
}

void FillReplicaScan(const ReplicaScanRequest& s, wire::ReplicaScan::Builder b) {
  b.setFirst(s.first);
  b.setLast(s.last);
  b.setMaxEntries(s.max_entries);
  b.setMaxBytes(s.max_bytes);
  if (!s.match.empty()) b.setMatch(AsData(s.match));
}

ReplicaScanRequest ReadReplicaScan(wire::ReplicaScan::Reader r) {
  return ReplicaScanRequest{r.getFirst(), r.getLast(), r.getMaxEntries(), r.getMaxBytes(),
                            ToString(r.getMatch())};
}

void FillScan(const ScanResponse& s, wire::Response::Body::Scan::Builder b) {
  auto keys = b.initKeys(static_cast<unsigned>(s.keys.size()));
  for (unsigned i = 0; i < s.keys.size(); ++i) keys.set(i, AsData(s.keys[i]));
  b.setCursor(s.cursor);
}

ScanResponse ReadScan(wire::Response::Body::Scan::Reader r) {
  ScanResponse out;
  auto keys = r.getKeys();
  out.keys.reserve(keys.size());
  for (auto k : keys) out.keys.push_back(ToString(k));
  out.cursor = r.getCursor();
  return out;
}

void FillReplicaScan(const ReplicaScanResponse& s, wire::Response::Body::ReplicaScan::Builder b) {
  auto list = b.initEntries(static_cast<unsigned>(s.entries.size()));
  for (unsigned i = 0; i < s.entries.size(); ++i) {
    const ScanEntry& e = s.entries[i];
    list[i].setToken(e.token);
    list[i].setKey(AsData(e.key));
    list[i].setTs(e.ts);
    list[i].setNodeId(e.node_id);
    list[i].setHidden(e.hidden);
    list[i].setExpiryTs(e.expiry_ts);
    list[i].setExpiryNodeId(e.expiry_node_id);
    list[i].setKind(static_cast<uint8_t>(e.kind));
  }
  b.setNext(s.next);
  b.setDone(s.done);
  b.setExamined(s.examined);
}

ReplicaScanResponse ReadReplicaScan(wire::Response::Body::ReplicaScan::Reader r) {
  ReplicaScanResponse out;
  auto list = r.getEntries();
  out.entries.reserve(list.size());
  for (auto e : list) {
    out.entries.push_back(ScanEntry{e.getToken(), ToString(e.getKey()), e.getTs(), e.getNodeId(),
                                    e.getHidden(), e.getExpiryTs(), e.getExpiryNodeId(),
                                    KindFromWire(e.getKind())});
  }
  out.next = r.getNext();
  out.done = r.getDone();
  out.examined = r.getExamined();
  return out;
}

}  // namespace shardkv::net::codec_internal
