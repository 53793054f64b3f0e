// The codec's private helpers and the per-op fill/read functions, shared by the codec's
// translation units (codec.cc: framing, limits and responses; codec_request.cc: requests;
// codec_stream.cc: the rebalancer's stream ops; codec_admin.cc: change commands and reports).
// They take generated Cap'n Proto types, so this header is private to src/net: nothing outside
// it may include a capnp header (design.md "Layers and what each may touch").
//
// Each reader visits every pointer once: the traversal limit (codec.cc, MakeReaderOptions)
// assumes a legitimate message costs about its own size.
#pragma once

#include <capnp/list.h>

#include <cstdint>
#include <string>

#include "net/legacy_reason.h"
#include "net/messages.h"
#include "shardkv.capnp.h"

namespace shardkv::net::codec_internal {

namespace wire = ::shardkv::net::wire;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

inline capnp::Data::Reader AsData(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}
// Explicit length: kj's conversion from std::string goes through strlen, which would silently
// cut an address or argument at an embedded NUL instead of round-tripping it.
inline capnp::Text::Reader AsText(const std::string& s) {
  return capnp::Text::Reader(s.data(), s.size());
}
inline std::string ToString(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}
inline std::string ToString(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

// Status::Code and wire::ErrorCode are kept numerically identical (shardkv.capnp says so);
// these casts still go through a range check so an unknown code from a newer peer degrades to
// kInternal instead of an out-of-range enum.
inline constexpr uint16_t kMaxKnownCode = static_cast<uint16_t>(Status::Code::kUnauthenticated);
static_assert(static_cast<uint16_t>(wire::ErrorCode::UNAUTHENTICATED) == kMaxKnownCode);
static_assert(static_cast<uint16_t>(wire::ErrorCode::STALE_EPOCH) ==
              static_cast<uint16_t>(Status::Code::kStaleEpoch));
inline wire::ErrorCode ToWire(Status::Code code) { return static_cast<wire::ErrorCode>(code); }

// A value kind from the wire: an unknown one (a newer node's) reads as a string.
inline ValueKind KindFromWire(uint8_t kind) {
  switch (kind) {
    case static_cast<uint8_t>(ValueKind::kHash):
      return ValueKind::kHash;
    case static_cast<uint8_t>(ValueKind::kSet):
      return ValueKind::kSet;
    default:
      return ValueKind::kString;
  }
}

// wire::ErrorReason is Status::Reason shifted by one (0 is `unset`: an older node's error).
static_assert(static_cast<uint16_t>(wire::ErrorReason::WRONG_TYPE) ==
              static_cast<uint16_t>(Status::Reason::kCount));
inline wire::ErrorReason ToWire(Status::Reason reason) {
  return static_cast<wire::ErrorReason>(static_cast<uint16_t>(reason) + 1);
}
// The reason an error arrived with; for an error of an older node (no reason on the wire), the
// one its message names (InferLegacyReason); a reason newer than this build is kNone.
inline Status::Reason FromWire(wire::ErrorReason reason, Status::Code code,
                               std::string_view message) {
  const auto v = static_cast<uint16_t>(reason);
  if (v == 0) return InferLegacyReason(code, message);
  if (v > static_cast<uint16_t>(Status::Reason::kCount)) return Status::Reason::kNone;
  return static_cast<Status::Reason>(v - 1);
}
inline Status::Code FromWire(wire::ErrorCode code) {
  auto v = static_cast<uint16_t>(code);
  return v <= kMaxKnownCode ? static_cast<Status::Code>(v) : Status::Code::kInternal;
}

// codec_request.cc
// The expiry register: nothing is written for the format-1 default, so a plain write's frame is
// byte-identical to 0.1.0's.
template <typename ListBuilder>
void FillCounter(const std::vector<CounterEntry>& in, ListBuilder list) {
  for (unsigned i = 0; i < in.size(); ++i) {
    auto o = list[i];
    o.setActor(in[i].actor);
    o.setBaseTs(in[i].base_ts);
    o.setBaseNodeId(in[i].base_node_id);
    o.setInc(in[i].inc);
    o.setDec(in[i].dec);
  }
}
template <typename ListReader>
std::vector<CounterEntry> ReadCounter(ListReader list) {
  std::vector<CounterEntry> out;
  out.reserve(list.size());
  for (auto c : list) {
    out.push_back(
        CounterEntry{c.getActor(), c.getBaseTs(), c.getBaseNodeId(), c.getInc(), c.getDec()});
  }
  return out;
}
template <typename ListBuilder>
void FillHash(const std::vector<HashField>& in, ListBuilder list) {
  for (unsigned i = 0; i < in.size(); ++i) {
    auto o = list[i];
    o.setName(AsData(in[i].name));
    o.setTs(in[i].ts);
    o.setNodeId(in[i].node_id);
    o.setDeleted(in[i].deleted);
    if (!in[i].value.empty()) o.setValue(AsData(in[i].value));
  }
}
template <typename ListReader>
std::vector<HashField> ReadHash(ListReader list) {
  std::vector<HashField> out;
  out.reserve(list.size());
  for (auto f : list) {
    out.push_back(HashField{ToString(f.getName()), f.getTs(), f.getNodeId(), f.getDeleted(),
                            ToString(f.getValue())});
  }
  return out;
}
template <typename ListBuilder>
void FillSet(const std::vector<SetMember>& in, ListBuilder list) {
  for (unsigned i = 0; i < in.size(); ++i) {
    auto o = list[i];
    o.setName(AsData(in[i].name));
    o.setActor(in[i].actor);
    o.setAdd(in[i].add);
    o.setRemoved(in[i].removed);
    o.setRemovedAt(in[i].removed_at);
  }
}
template <typename ListReader>
std::vector<SetMember> ReadSet(ListReader list) {
  std::vector<SetMember> out;
  out.reserve(list.size());
  for (auto m : list) {
    out.push_back(SetMember{ToString(m.getName()), m.getActor(), m.getAdd(), m.getRemoved(),
                            m.getRemovedAt()});
  }
  return out;
}
inline void FillExpiry(const ExpiryRegister& e, wire::ExpiryRegister::Builder b) {
  b.setExplicit(e.explicit_expiry);
  b.setValueAbsent(e.value_absent);
  b.setTs(e.ts);
  b.setNodeId(e.node_id);
  b.setExpiresAtMs(e.expires_at_ms);
  if (!e.counter.empty()) {
    FillCounter(e.counter, b.initCounter(static_cast<unsigned>(e.counter.size())));
  }
  if (!e.hash.empty()) FillHash(e.hash, b.initHash(static_cast<unsigned>(e.hash.size())));
  if (!e.set.empty()) FillSet(e.set, b.initSet(static_cast<unsigned>(e.set.size())));
}
inline ExpiryRegister ReadExpiry(wire::ExpiryRegister::Reader r) {
  return ExpiryRegister{r.getExplicit(),       r.getValueAbsent(), r.getTs(),
                        r.getNodeId(),         r.getExpiresAtMs(), ReadCounter(r.getCounter()),
                        ReadHash(r.getHash()), ReadSet(r.getSet())};
}

// The version part of a VersionedRecord (ts, node, tombstone, value, expiry): one fill and one
// read for the three wire structs that carry it (replicaWrite, the replicaRead reply, stream
// entries), whose field names agree.
template <typename Builder>
void FillVersion(const VersionedRecord& v, Builder out) {
  out.setTs(v.ts);
  out.setNodeId(v.node_id);
  out.setTombstone(v.tombstone);
  if (!v.value.empty()) out.setValue(AsData(v.value));
  if (v.expiry != ExpiryRegister{}) FillExpiry(v.expiry, out.initExpiry());
}
template <typename Reader>
void ReadVersion(Reader in, VersionedRecord* v) {
  v->ts = in.getTs();
  v->node_id = in.getNodeId();
  v->tombstone = in.getTombstone();
  v->value = ToString(in.getValue());
  v->expiry = ReadExpiry(in.getExpiry());
}
// The same with the key (replicaWrite, stream entries).
template <typename Builder>
void FillRecord(const VersionedRecord& v, Builder out) {
  out.setToken(v.token);
  out.setKey(AsData(v.key));
  FillVersion(v, out);
}
template <typename Reader>
void ReadRecord(Reader in, VersionedRecord* v) {
  v->token = in.getToken();
  v->key = ToString(in.getKey());
  ReadVersion(in, v);
}

void FillRequest(const Request& r, wire::Request::Builder b);
StatusOr<Request> ReadRequest(wire::Request::Reader root, uint64_t* request_id);

// codec_stream.cc
void FillStreamScan(const StreamScanRequest& s, wire::StreamScan::Builder b);
StreamScanRequest ReadStreamScan(wire::StreamScan::Reader r);
void FillStreamRange(const StreamRangeRequest& s, wire::StreamRange::Builder b);
StreamRangeRequest ReadStreamRange(wire::StreamRange::Reader r);
void FillCountRanges(const CountRangesRequest& c, capnp::List<wire::TokenSpan>::Builder list);
CountRangesRequest ReadCountRanges(capnp::List<wire::TokenSpan>::Reader list);
void FillStreamScan(const StreamScanResponse& s, wire::Response::Body::StreamScan::Builder b);
StreamScanResponse ReadStreamScan(wire::Response::Body::StreamScan::Reader r);
void FillStreamRange(const StreamRangeResponse& s, wire::Response::Body::StreamRange::Builder b);
StreamRangeResponse ReadStreamRange(wire::Response::Body::StreamRange::Reader r);
void FillCountRanges(const CountRangesResponse& c, capnp::List<wire::RangeCount>::Builder list);
CountRangesResponse ReadCountRanges(capnp::List<wire::RangeCount>::Reader list);

// codec_admin.cc
void FillChangeCommand(const AdminRequest& a, wire::ChangeCommand::Builder b);
StatusOr<AdminRequest> ReadChangeCommand(wire::ChangeCommand::Reader r);
// A 0.1.0 CLI's text command: always an error that says what to do.
Status RefuseTextAdmin(wire::Admin::Reader r);
std::string EncodeChangeReport(const AdminResponse& a);
StatusOr<AdminResponse> DecodeChangeReport(capnp::Data::Reader bytes);

// codec_scan.cc
void FillScan(const ScanRequest& s, wire::Scan::Builder b);
ScanRequest ReadScan(wire::Scan::Reader r);
void FillReplicaScan(const ReplicaScanRequest& s, wire::ReplicaScan::Builder b);
ReplicaScanRequest ReadReplicaScan(wire::ReplicaScan::Reader r);
void FillScan(const ScanResponse& s, wire::Response::Body::Scan::Builder b);
ScanResponse ReadScan(wire::Response::Body::Scan::Reader r);
void FillReplicaScan(const ReplicaScanResponse& s, wire::Response::Body::ReplicaScan::Builder b);
ReplicaScanResponse ReadReplicaScan(wire::Response::Body::ReplicaScan::Reader r);

}  // namespace shardkv::net::codec_internal
