#include "net/codec.h"

#include <capnp/message.h>
#include <capnp/serialize.h>
#include <kj/exception.h>
#include <kj/io.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <type_traits>

#include "shardkv.capnp.h"

namespace shardkv::net {

// The rebalancer's ops, defined in codec_stream.cc to keep this file short. Declared here, not
// in a header, because nothing but this file may call them: they take generated capnp types,
// which stay private to src/net.
namespace codec_internal {
void FillStreamScan(const StreamScanRequest& s, wire::StreamScan::Builder b);
StreamScanRequest ReadStreamScan(wire::StreamScan::Reader r);
void FillStreamRange(const StreamRangeRequest& s, wire::StreamRange::Builder b);
StreamRangeRequest ReadStreamRange(wire::StreamRange::Reader r);
void FillCountRanges(const CountRangesRequest& c, capnp::List<wire::TokenSpan>::Builder list);
CountRangesRequest ReadCountRanges(capnp::List<wire::TokenSpan>::Reader list);
void FillAdmin(const AdminRequest& a, wire::Admin::Builder b);
AdminRequest ReadAdmin(wire::Admin::Reader r);
void FillStreamScan(const StreamScanResponse& s, wire::Response::Body::StreamScan::Builder b);
StreamScanResponse ReadStreamScan(wire::Response::Body::StreamScan::Reader r);
void FillStreamRange(const StreamRangeResponse& s, wire::Response::Body::StreamRange::Builder b);
StreamRangeResponse ReadStreamRange(wire::Response::Body::StreamRange::Reader r);
void FillCountRanges(const CountRangesResponse& c, capnp::List<wire::RangeCount>::Builder list);
CountRangesResponse ReadCountRanges(capnp::List<wire::RangeCount>::Reader list);
}  // namespace codec_internal

namespace {

namespace wire = ::shardkv::net::wire;

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

// First segment for MallocMessageBuilder: point ops fit in it, so encoding them allocates
// nothing but the output string. Must start zeroed; the builder re-zeroes what it used.
constexpr size_t kScratchWords = 1024;  // 8 KiB
// Segments per message we accept. Our encoder grows segments geometrically, so even a 64 MiB
// message has a few dozen; a hostile table is rejected before Cap'n Proto walks it.
constexpr uint32_t kMaxSegments = 512;
thread_local capnp::word tls_scratch[kScratchWords];

capnp::Data::Reader AsData(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

std::string ToString(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

std::string ToString(capnp::Text::Reader t) { return std::string(t.cStr(), t.size()); }

void StoreLe32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v);
  p[1] = static_cast<char>(v >> 8);
  p[2] = static_cast<char>(v >> 16);
  p[3] = static_cast<char>(v >> 24);
}

// Status::Code and wire::ErrorCode are kept numerically identical (shardkv.capnp says so);
// these casts still go through a range check so an unknown code from a newer peer degrades to
// kInternal instead of an out-of-range enum.
constexpr uint16_t kMaxKnownCode = static_cast<uint16_t>(Status::Code::kInternal);
static_assert(static_cast<uint16_t>(wire::ErrorCode::INTERNAL) == kMaxKnownCode);
static_assert(static_cast<uint16_t>(wire::ErrorCode::STALE_EPOCH) ==
              static_cast<uint16_t>(Status::Code::kStaleEpoch));

wire::ErrorCode ToWire(Status::Code code) { return static_cast<wire::ErrorCode>(code); }

Status::Code FromWire(wire::ErrorCode code) {
  auto v = static_cast<uint16_t>(code);
  return v <= kMaxKnownCode ? static_cast<Status::Code>(v) : Status::Code::kInternal;
}

wire::Consistency ToWire(Consistency c) {
  switch (c) {
    case Consistency::kOne:
      return wire::Consistency::ONE;
    case Consistency::kQuorum:
      return wire::Consistency::QUORUM;
    case Consistency::kAll:
      return wire::Consistency::ALL;
    case Consistency::kDefault:
      break;
  }
  return wire::Consistency::DEFAULT;
}

capnp::ReaderOptions MakeReaderOptions(const CodecOptions& o, size_t message_words) {
  capnp::ReaderOptions r;
  uint64_t limit = o.traversal_limit_words;
  // Relative to the message, not to the frame limit: with a fixed 16M-word budget a 64-byte
  // frame could declare 16M zero-sized list elements and make the decoder allocate gigabytes.
  if (limit == 0) limit = 2 * uint64_t{message_words} + 64;
  r.traversalLimitInWords = limit;
  r.nestingLimit = o.nesting_limit;
  return r;
}

// FlatArrayMessageReader needs word-aligned input; a payload inside a read buffer usually sits
// 4 bytes past a word boundary, so it is copied into reusable thread-local storage.
kj::ArrayPtr<const capnp::word> AlignedWords(std::string_view payload) {
  const size_t words = payload.size() / sizeof(capnp::word);
  if (reinterpret_cast<uintptr_t>(payload.data()) % alignof(capnp::word) == 0) {
    return kj::arrayPtr(reinterpret_cast<const capnp::word*>(payload.data()), words);
  }
  thread_local std::unique_ptr<uint64_t[]> storage;
  thread_local size_t capacity = 0;
  if (capacity < words) {
    capacity = std::max(words, size_t{1024});
    storage.reset(new uint64_t[capacity]);
  }
  std::memcpy(storage.get(), payload.data(), words * sizeof(capnp::word));
  return kj::arrayPtr(reinterpret_cast<const capnp::word*>(storage.get()), words);
}

// Builds a message with `fill` and appends it as one frame to `*out`.
template <typename Root, typename Fill>
Status EncodeFrame(std::string* out, const CodecOptions& options, Fill&& fill) {
  const size_t old_size = out->size();
  try {
    capnp::MallocMessageBuilder builder(kj::arrayPtr(tls_scratch, kScratchWords));
    fill(builder.initRoot<Root>());
    const size_t bytes = capnp::computeSerializedSizeInWords(builder) * sizeof(capnp::word);
    if (bytes > options.max_frame_bytes || bytes > std::numeric_limits<uint32_t>::max()) {
      return Status::InvalidArgument("message of " + std::to_string(bytes) +
                                     " bytes exceeds the maximum frame size of " +
                                     std::to_string(options.max_frame_bytes));
    }
    out->resize(old_size + kFrameHeaderBytes + bytes);
    char* frame = out->data() + old_size;
    StoreLe32(frame, static_cast<uint32_t>(bytes));
    kj::ArrayOutputStream stream(
        kj::arrayPtr(reinterpret_cast<kj::byte*>(frame + kFrameHeaderBytes), bytes));
    capnp::writeMessage(stream, builder);
    return Status::OK();
  } catch (const kj::Exception& e) {
    out->resize(old_size);
    return Status::InvalidArgument(std::string("cannot encode message: ") +
                                   e.getDescription().cStr());
  } catch (const std::exception& e) {
    out->resize(old_size);
    return Status::ResourceExhausted(std::string("cannot encode message: ") + e.what());
  }
}

void FillRequest(const Request& r, wire::Request::Builder b) {
  b.setId(r.id);
  b.setEpoch(r.epoch);
  b.setClusterId(r.cluster_id);
  b.setClientTs(r.client_ts);
  b.setDeadlineMs(r.deadline_ms);
  b.setConsistency(ToWire(r.consistency));
  auto body = b.getBody();
  std::visit(Overloaded{
                 [&](const PingRequest&) { body.setPing(); },
                 [&](const GetRequest& g) {
                   auto k = body.initGet();
                   k.setToken(g.token);
                   k.setKey(AsData(g.key));
                 },
                 [&](const PutRequest& p) {
                   auto kv = body.initPut();
                   kv.setToken(p.token);
                   kv.setKey(AsData(p.key));
                   kv.setValue(AsData(p.value));
                 },
                 [&](const DeleteRequest& d) {
                   auto k = body.initDelete();
                   k.setToken(d.token);
                   k.setKey(AsData(d.key));
                 },
                 [&](const MultiGetRequest& m) {
                   auto list = body.initMultiGet(static_cast<unsigned>(m.keys.size()));
                   for (unsigned i = 0; i < m.keys.size(); ++i) {
                     list[i].setToken(m.keys[i].token);
                     list[i].setKey(AsData(m.keys[i].key));
                   }
                 },
                 [&](const MultiPutRequest& m) {
                   auto list = body.initMultiPut(static_cast<unsigned>(m.items.size()));
                   for (unsigned i = 0; i < m.items.size(); ++i) {
                     list[i].setToken(m.items[i].token);
                     list[i].setKey(AsData(m.items[i].key));
                     list[i].setValue(AsData(m.items[i].value));
                   }
                 },
                 [&](const StatsRequest&) { body.setStats(); },
                 [&](const GetClusterMapRequest&) { body.setGetClusterMap(); },
                 [&](const ReplicaWriteRequest& w) {
                   auto out = body.initReplicaWrite();
                   out.setToken(w.token);
                   out.setKey(AsData(w.key));
                   out.setTs(w.ts);
                   out.setNodeId(w.node_id);
                   out.setTombstone(w.tombstone);
                   if (!w.value.empty()) out.setValue(AsData(w.value));
                 },
                 [&](const ReplicaReadRequest& rr) {
                   auto k = body.initReplicaRead();
                   k.setToken(rr.token);
                   k.setKey(AsData(rr.key));
                 },
                 [&](const InstallMapRequest& m) {
                   auto out = body.initInstallMap();
                   out.setMap(AsData(m.map));
                   out.setExpectedEpoch(m.expected_epoch);
                   out.setAdopt(m.adopt);
                 },
                 [&](const StreamScanRequest& s) {
                   codec_internal::FillStreamScan(s, body.initStreamScan());
                 },
                 [&](const StreamRangeRequest& s) {
                   codec_internal::FillStreamRange(s, body.initStreamRange());
                 },
                 [&](const CountRangesRequest& c) {
                   codec_internal::FillCountRanges(
                       c, body.initCountRanges(static_cast<unsigned>(c.ranges.size())));
                 },
                 [&](const AdminRequest& a) { codec_internal::FillAdmin(a, body.initAdmin()); },
             },
             r.body);
}

void FillItems(const std::vector<ItemResult>& items, capnp::List<wire::ItemResult>::Builder list) {
  for (unsigned i = 0; i < items.size(); ++i) {
    const ItemResult& it = items[i];
    auto b = list[i];
    b.setCode(ToWire(it.status.code()));
    if (!it.status.ok()) b.setMessage(it.status.message());
    b.setFound(it.found);
    if (!it.value.empty()) b.setValue(AsData(it.value));
    b.setTs(it.ts);
  }
}

void FillResponse(const Response& r, wire::Response::Builder b) {
  b.setId(r.id);
  b.setEpoch(r.epoch);
  b.setTs(r.ts);
  if (!r.cluster_map.empty()) b.setClusterMap(AsData(r.cluster_map));
  auto body = b.getBody();
  std::visit(
      Overloaded{
          [&](const ErrorResponse& e) {
            auto g = body.initError();
            g.setCode(ToWire(e.code == Status::Code::kOk ? Status::Code::kInternal : e.code));
            g.setMessage(e.message);
          },
          [&](const PingResponse&) { body.setPing(); },
          [&](const GetResponse& g) {
            auto out = body.initGet();
            out.setFound(g.found);
            if (!g.value.empty()) out.setValue(AsData(g.value));
            out.setTs(g.ts);
          },
          [&](const PutResponse& p) { body.initPut().setTs(p.ts); },
          [&](const DeleteResponse& d) { body.initDelete().setTs(d.ts); },
          [&](const MultiGetResponse& m) {
            FillItems(m.results, body.initMultiGet(static_cast<unsigned>(m.results.size())));
          },
          [&](const MultiPutResponse& m) {
            FillItems(m.results, body.initMultiPut(static_cast<unsigned>(m.results.size())));
          },
          [&](const StatsResponse& s) {
            auto list = body.initStats(static_cast<unsigned>(s.counters.size() + s.gauges.size()));
            unsigned i = 0;
            for (const auto& [name, v] : s.counters) {
              list[i].setName(name);
              list[i++].getValue().setInt(v);
            }
            for (const auto& [name, v] : s.gauges) {
              list[i].setName(name);
              list[i++].getValue().setReal(v);
            }
          },
          [&](const GetClusterMapResponse& m) { body.setGetClusterMap(AsData(m.map)); },
          [&](const ReplicaWriteResponse& w) { body.setReplicaWrite(w.outcome); },
          [&](const ReplicaReadResponse& rr) {
            auto out = body.initReplicaRead();
            out.setFound(rr.found);
            out.setTs(rr.ts);
            out.setNodeId(rr.node_id);
            out.setTombstone(rr.tombstone);
            if (!rr.value.empty()) out.setValue(AsData(rr.value));
          },
          [&](const InstallMapResponse& m) {
            auto out = body.initInstallMap();
            out.setAccepted(m.accepted);
            out.setEpoch(m.epoch);
          },
          [&](const StreamScanResponse& s) {
            codec_internal::FillStreamScan(s, body.initStreamScan());
          },
          [&](const StreamRangeResponse& s) {
            codec_internal::FillStreamRange(s, body.initStreamRange());
          },
          [&](const CountRangesResponse& c) {
            codec_internal::FillCountRanges(
                c, body.initCountRanges(static_cast<unsigned>(c.counts.size())));
          },
          // Always set, even when empty: setting the member is what selects the union arm.
          [&](const AdminResponse& a) { body.setAdmin(AsData(a.payload)); },
      },
      r.body);
}

Status CheckPayload(std::string_view payload, const CodecOptions& options) {
  if (payload.empty() || payload.size() % sizeof(capnp::word) != 0) {
    return Status::Corruption("frame payload of " + std::to_string(payload.size()) +
                              " bytes is not a whole number of 8-byte words");
  }
  if (payload.size() > options.max_frame_bytes) {
    return Status::Corruption("frame payload of " + std::to_string(payload.size()) +
                              " bytes exceeds the maximum frame size");
  }
  // The first word of a flat message is (segment count - 1). Cap'n Proto adds 1 in 32 bits, so
  // 0xFFFFFFFF would wrap to "0 segments" and parse as an empty message.
  const auto* p = reinterpret_cast<const unsigned char*>(payload.data());
  const uint32_t segments_minus_one =
      uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
  if (segments_minus_one >= kMaxSegments) {
    return Status::Corruption("frame announces " +
                              std::to_string(uint64_t{segments_minus_one} + 1) +
                              " segments (at most " + std::to_string(kMaxSegments) + ")");
  }
  return Status::OK();
}

StatusOr<Request> ReadRequest(wire::Request::Reader root, uint64_t* request_id) {
  Request r;
  r.id = root.getId();
  if (request_id != nullptr) *request_id = r.id;
  r.epoch = root.getEpoch();
  r.cluster_id = root.getClusterId();
  r.client_ts = root.getClientTs();
  r.deadline_ms = root.getDeadlineMs();
  switch (root.getConsistency()) {
    case wire::Consistency::DEFAULT:
      r.consistency = Consistency::kDefault;
      break;
    case wire::Consistency::ONE:
      r.consistency = Consistency::kOne;
      break;
    case wire::Consistency::QUORUM:
      r.consistency = Consistency::kQuorum;
      break;
    case wire::Consistency::ALL:
      r.consistency = Consistency::kAll;
      break;
    default:
      return Status::NotSupported("unknown consistency level " +
                                  std::to_string(static_cast<int>(root.getConsistency())));
  }
  auto body = root.getBody();
  switch (body.which()) {
    case wire::Request::Body::PING:
      r.body = PingRequest{};
      break;
    case wire::Request::Body::GET: {
      auto k = body.getGet();
      r.body = GetRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::PUT: {
      auto kv = body.getPut();
      r.body = PutRequest{kv.getToken(), ToString(kv.getKey()), ToString(kv.getValue())};
      break;
    }
    case wire::Request::Body::DELETE: {
      auto k = body.getDelete();
      r.body = DeleteRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::MULTI_GET: {
      MultiGetRequest m;
      auto list = body.getMultiGet();
      m.keys.reserve(list.size());
      for (auto k : list) m.keys.push_back(GetRequest{k.getToken(), ToString(k.getKey())});
      r.body = std::move(m);
      break;
    }
    case wire::Request::Body::MULTI_PUT: {
      MultiPutRequest m;
      auto list = body.getMultiPut();
      m.items.reserve(list.size());
      for (auto kv : list) {
        m.items.push_back(
            PutRequest{kv.getToken(), ToString(kv.getKey()), ToString(kv.getValue())});
      }
      r.body = std::move(m);
      break;
    }
    case wire::Request::Body::STATS:
      r.body = StatsRequest{};
      break;
    case wire::Request::Body::GET_CLUSTER_MAP:
      r.body = GetClusterMapRequest{};
      break;
    case wire::Request::Body::REPLICA_WRITE: {
      auto w = body.getReplicaWrite();
      r.body = ReplicaWriteRequest{w.getToken(),  ToString(w.getKey()), w.getTs(),
                                   w.getNodeId(), w.getTombstone(),     ToString(w.getValue())};
      break;
    }
    case wire::Request::Body::REPLICA_READ: {
      auto k = body.getReplicaRead();
      r.body = ReplicaReadRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::INSTALL_MAP: {
      auto m = body.getInstallMap();
      r.body = InstallMapRequest{ToString(m.getMap()), m.getExpectedEpoch(), m.getAdopt()};
      break;
    }
    case wire::Request::Body::STREAM_SCAN:
      r.body = codec_internal::ReadStreamScan(body.getStreamScan());
      break;
    case wire::Request::Body::STREAM_RANGE:
      r.body = codec_internal::ReadStreamRange(body.getStreamRange());
      break;
    case wire::Request::Body::COUNT_RANGES:
      r.body = codec_internal::ReadCountRanges(body.getCountRanges());
      break;
    case wire::Request::Body::ADMIN:
      r.body = codec_internal::ReadAdmin(body.getAdmin());
      break;
    default:
      return Status::NotSupported("unknown request op " +
                                  std::to_string(static_cast<int>(body.which())));
  }
  return r;
}

std::vector<ItemResult> ReadItems(capnp::List<wire::ItemResult>::Reader list) {
  std::vector<ItemResult> out;
  out.reserve(list.size());
  for (auto it : list) {
    ItemResult r;
    if (it.getCode() != wire::ErrorCode::OK) {
      r.status = Status(FromWire(it.getCode()), ToString(it.getMessage()));
    }
    r.found = it.getFound();
    r.value = ToString(it.getValue());
    r.ts = it.getTs();
    out.push_back(std::move(r));
  }
  return out;
}

StatusOr<Response> ReadResponse(wire::Response::Reader root) {
  Response r;
  r.id = root.getId();
  r.epoch = root.getEpoch();
  r.ts = root.getTs();
  if (root.hasClusterMap()) r.cluster_map = ToString(root.getClusterMap());
  auto body = root.getBody();
  switch (body.which()) {
    case wire::Response::Body::ERROR: {
      auto e = body.getError();
      Status::Code code = FromWire(e.getCode());
      if (code == Status::Code::kOk) code = Status::Code::kInternal;
      r.body = ErrorResponse{code, ToString(e.getMessage())};
      break;
    }
    case wire::Response::Body::PING:
      r.body = PingResponse{};
      break;
    case wire::Response::Body::GET: {
      auto g = body.getGet();
      r.body = GetResponse{g.getFound(), ToString(g.getValue()), g.getTs()};
      break;
    }
    case wire::Response::Body::PUT:
      r.body = PutResponse{body.getPut().getTs()};
      break;
    case wire::Response::Body::DELETE:
      r.body = DeleteResponse{body.getDelete().getTs()};
      break;
    case wire::Response::Body::MULTI_GET:
      r.body = MultiGetResponse{ReadItems(body.getMultiGet())};
      break;
    case wire::Response::Body::MULTI_PUT:
      r.body = MultiPutResponse{ReadItems(body.getMultiPut())};
      break;
    case wire::Response::Body::STATS: {
      StatsResponse s;
      for (auto stat : body.getStats()) {
        auto v = stat.getValue();
        if (v.isInt()) {
          s.counters[ToString(stat.getName())] = v.getInt();
        } else if (v.isReal()) {
          s.gauges[ToString(stat.getName())] = v.getReal();
        }  // a newer kind of stat value is skipped
      }
      r.body = std::move(s);
      break;
    }
    case wire::Response::Body::GET_CLUSTER_MAP:
      r.body = GetClusterMapResponse{ToString(body.getGetClusterMap())};
      break;
    case wire::Response::Body::REPLICA_WRITE:
      r.body = ReplicaWriteResponse{body.getReplicaWrite()};
      break;
    case wire::Response::Body::REPLICA_READ: {
      auto rr = body.getReplicaRead();
      r.body = ReplicaReadResponse{rr.getFound(), rr.getTs(), rr.getNodeId(), rr.getTombstone(),
                                   ToString(rr.getValue())};
      break;
    }
    case wire::Response::Body::INSTALL_MAP: {
      auto m = body.getInstallMap();
      r.body = InstallMapResponse{m.getAccepted(), m.getEpoch()};
      break;
    }
    case wire::Response::Body::STREAM_SCAN:
      r.body = codec_internal::ReadStreamScan(body.getStreamScan());
      break;
    case wire::Response::Body::STREAM_RANGE:
      r.body = codec_internal::ReadStreamRange(body.getStreamRange());
      break;
    case wire::Response::Body::COUNT_RANGES:
      r.body = codec_internal::ReadCountRanges(body.getCountRanges());
      break;
    case wire::Response::Body::ADMIN:
      r.body = AdminResponse{ToString(body.getAdmin())};
      break;
    default:
      return Status::NotSupported("unknown response op " +
                                  std::to_string(static_cast<int>(body.which())));
  }
  return r;
}

// Runs `read` on the payload's root under the codec's limits; turns every exception into a
// Status so that nothing escapes the network boundary.
template <typename Root, typename Result, typename Read>
StatusOr<Result> DecodeFrame(std::string_view payload, const CodecOptions& options,
                             std::string_view what, Read&& read) {
  SHARDKV_RETURN_IF_ERROR(CheckPayload(payload, options));
  try {
    kj::ArrayPtr<const capnp::word> words = AlignedWords(payload);
    capnp::FlatArrayMessageReader reader(words, MakeReaderOptions(options, words.size()));
    if (reader.getEnd() != words.end()) {
      return Status::Corruption("malformed " + std::string(what) + ": " +
                                std::to_string((words.end() - reader.getEnd()) * 8) +
                                " trailing bytes after the message");
    }
    return read(reader.getRoot<Root>());
  } catch (const kj::Exception& e) {
    return Status::Corruption("malformed " + std::string(what) + ": " + e.getDescription().cStr());
  } catch (const std::exception& e) {
    return Status::Corruption("malformed " + std::string(what) + ": " + e.what());
  }
}

}  // namespace

Status EncodeRequest(const Request& request, std::string* out, const CodecOptions& options) {
  return EncodeFrame<wire::Request>(out, options,
                                    [&](wire::Request::Builder b) { FillRequest(request, b); });
}

Status EncodeResponse(const Response& response, std::string* out, const CodecOptions& options) {
  return EncodeFrame<wire::Response>(out, options,
                                     [&](wire::Response::Builder b) { FillResponse(response, b); });
}

StatusOr<Request> DecodeRequest(std::string_view payload, const CodecOptions& options,
                                uint64_t* request_id) {
  if (request_id != nullptr) *request_id = 0;
  return DecodeFrame<wire::Request, Request>(
      payload, options, "request",
      [&](wire::Request::Reader root) { return ReadRequest(root, request_id); });
}

StatusOr<Response> DecodeResponse(std::string_view payload, const CodecOptions& options) {
  return DecodeFrame<wire::Response, Response>(payload, options, "response", ReadResponse);
}

}  // namespace shardkv::net
