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

#include "net/codec_internal.h"
#include "net/codec_repair.h"

namespace shardkv::net {

namespace {

using namespace codec_internal;  // NOLINT: the codec's own helpers

// First segment for MallocMessageBuilder: point ops fit in it, so encoding them allocates
// nothing but the output string. Must start zeroed; the builder re-zeroes what it used.
constexpr size_t kScratchWords = 1024;  // 8 KiB
// Segments per message we accept. Our encoder grows segments geometrically, so even a 64 MiB
// message has a few dozen; a hostile table is rejected before Cap'n Proto walks it.
constexpr uint32_t kMaxSegments = 512;
thread_local capnp::word tls_scratch[kScratchWords];

void StoreLe32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v);
  p[1] = static_cast<char>(v >> 8);
  p[2] = static_cast<char>(v >> 16);
  p[3] = static_cast<char>(v >> 24);
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

thread_local std::unique_ptr<uint64_t[]> tls_aligned;
thread_local size_t tls_aligned_capacity = 0;

// FlatArrayMessageReader needs word-aligned input; a payload inside a read buffer usually sits
// 4 bytes past a word boundary, so it is copied into reusable thread-local storage.
kj::ArrayPtr<const capnp::word> AlignedWords(std::string_view payload) {
  const size_t words = payload.size() / sizeof(capnp::word);
  if (reinterpret_cast<uintptr_t>(payload.data()) % alignof(capnp::word) == 0) {
    return kj::arrayPtr(reinterpret_cast<const capnp::word*>(payload.data()), words);
  }
  if (tls_aligned_capacity < words) {
    tls_aligned_capacity = std::max(words, size_t{1024});
    tls_aligned.reset(new uint64_t[tls_aligned_capacity]);
  }
  std::memcpy(tls_aligned.get(), payload.data(), words * sizeof(capnp::word));
  return kj::arrayPtr(reinterpret_cast<const capnp::word*>(tls_aligned.get()), words);
}

// After a decode: a copy of one large message is not kept for the thread's life.
void ReleaseLargeAlignedWords() {
  if (tls_aligned_capacity * sizeof(uint64_t) > kKeepBufferBytes) {
    tls_aligned.reset();
    tls_aligned_capacity = 0;
  }
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

void FillItems(const std::vector<ItemResult>& items, capnp::List<wire::ItemResult>::Builder list) {
  for (unsigned i = 0; i < items.size(); ++i) {
    const ItemResult& it = items[i];
    auto b = list[i];
    b.setCode(ToWire(it.status.code()));
    if (!it.status.ok()) {
      b.setMessage(it.status.message());
      b.setReason(ToWire(it.status.reason()));
    }
    b.setFound(it.found);
    if (!it.value.empty()) b.setValue(AsData(it.value));
    b.setTs(it.ts);
    b.setKind(static_cast<uint8_t>(it.kind));
  }
}

void FillResponse(const Response& r, wire::Response::Builder b) {
  b.setId(r.id);
  b.setEpoch(r.epoch);
  b.setTs(r.ts);
  b.setWallClockMs(r.wall_clock_ms);
  if (!r.cluster_map.empty()) b.setClusterMap(AsData(r.cluster_map));
  auto body = b.getBody();
  std::visit(
      Overloaded{
          [&](const ErrorResponse& e) {
            auto g = body.initError();
            g.setCode(ToWire(e.code == Status::Code::kOk ? Status::Code::kInternal : e.code));
            g.setMessage(e.message);
            g.setReason(ToWire(e.reason));
          },
          [&](const PingResponse&) { body.setPing(); },
          [&](const GetResponse& g) {
            auto out = body.initGet();
            out.setFound(g.found);
            if (!g.value.empty()) out.setValue(AsData(g.value));
            out.setTs(g.ts);
            out.setExpiresAtMs(g.expires_at_ms);
            out.setKind(static_cast<uint8_t>(g.kind));
          },
          [&](const PutResponse& p) { body.initPut().setTs(p.ts); },
          [&](const DeleteResponse& d) { body.initDelete().setTs(d.ts); },
          [&](const IncrResponse& i) { body.setIncr(i.value); },
          [&](const HashWriteResponse& h) { body.setHashWrite(h.changed); },
          [&](const HashReadResponse& h) {
            auto out = body.initHashRead();
            out.setFound(h.found);
            out.setExpiresAtMs(h.expires_at_ms);
            auto list = out.initFields(static_cast<unsigned>(h.fields.size()));
            for (unsigned i = 0; i < h.fields.size(); ++i) {
              list[i].setName(AsData(h.fields[i].name));
              list[i].setValue(AsData(h.fields[i].value));
            }
          },
          [&](const SetWriteResponse& s) { body.setSetWrite(s.changed); },
          [&](const SetReadResponse& s) {
            auto out = body.initSetRead();
            out.setFound(s.found);
            out.setExpiresAtMs(s.expires_at_ms);
            auto list = out.initMembers(static_cast<unsigned>(s.members.size()));
            for (unsigned i = 0; i < s.members.size(); ++i) list.set(i, AsData(s.members[i]));
          },
          [&](const MultiGetResponse& m) {
            FillItems(m.results, body.initMultiGet(static_cast<unsigned>(m.results.size())));
          },
          [&](const MultiPutResponse& m) {
            FillItems(m.results, body.initMultiPut(static_cast<unsigned>(m.results.size())));
          },
          [&](const StatsResponse& s) {
            auto list = body.initStats(
                static_cast<unsigned>(s.counters.size() + s.gauges.size() + s.info.size()));
            unsigned i = 0;
            for (const auto& [name, v] : s.counters) {
              list[i].setName(name);
              list[i++].getValue().setInt(v);
            }
            for (const auto& [name, v] : s.gauges) {
              list[i].setName(name);
              list[i++].getValue().setReal(v);
            }
            for (const auto& [name, v] : s.info) {
              list[i].setName(name);
              list[i++].getValue().setText(v);
            }
          },
          [&](const GetClusterMapResponse& m) { body.setGetClusterMap(AsData(m.map)); },
          [&](const ReplicaWriteResponse& w) { body.setReplicaWrite(w.outcome); },
          [&](const ReplicaReadResponse& rr) {
            auto out = body.initReplicaRead();
            out.setFound(rr.found);
            FillVersion(rr, out);
          },
          [&](const InstallMapResponse& m) {
            auto out = body.initInstallMap();
            out.setAccepted(m.accepted);
            out.setEpoch(m.epoch);
          },
          [&](const StreamScanResponse& s) { FillStreamScan(s, body.initStreamScan()); },
          [&](const StreamRangeResponse& s) { FillStreamRange(s, body.initStreamRange()); },
          [&](const CountRangesResponse& c) {
            FillCountRanges(c, body.initCountRanges(static_cast<unsigned>(c.counts.size())));
          },
          // Always set, even when empty: setting the member is what selects the union arm.
          [&](const AdminResponse& a) { body.setChangeReport(AsData(EncodeChangeReport(a))); },
          [&](const ScanResponse& s) { FillScan(s, body.initScan()); },
          [&](const ReplicaScanResponse& s) { FillReplicaScan(s, body.initReplicaScan()); },
          [&](const AntiEntropyResponse& a) { FillAntiEntropy(a, body.initAntiEntropy()); },
          [&](const ReplicaWriteBatchResponse& batch) {
            auto list = body.initReplicaWriteBatch(static_cast<unsigned>(batch.results.size()));
            for (unsigned i = 0; i < batch.results.size(); ++i) {
              const ReplicaWriteResult& res = batch.results[i];
              list[i].setOutcome(res.outcome);
              list[i].setCode(ToWire(res.status.code()));
              if (!res.status.ok()) {
                list[i].setMessage(res.status.message());
                list[i].setReason(ToWire(res.status.reason()));
              }
            }
          },
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

std::vector<ItemResult> ReadItems(capnp::List<wire::ItemResult>::Reader list) {
  std::vector<ItemResult> out;
  out.reserve(list.size());
  for (auto it : list) {
    ItemResult r;
    if (it.getCode() != wire::ErrorCode::OK) {
      const Status::Code code = FromWire(it.getCode());
      std::string message = ToString(it.getMessage());
      const Status::Reason reason = FromWire(it.getReason(), code, message);
      r.status = Status(code, reason, std::move(message));
    }
    r.found = it.getFound();
    r.value = ToString(it.getValue());
    r.ts = it.getTs();
    r.kind = KindFromWire(it.getKind());
    out.push_back(std::move(r));
  }
  return out;
}

StatusOr<Response> ReadResponse(wire::Response::Reader root) {
  Response r;
  r.id = root.getId();
  r.epoch = root.getEpoch();
  r.ts = root.getTs();
  r.wall_clock_ms = root.getWallClockMs();
  if (root.hasClusterMap()) r.cluster_map = ToString(root.getClusterMap());
  auto body = root.getBody();
  switch (body.which()) {
    case wire::Response::Body::ERROR: {
      auto e = body.getError();
      Status::Code code = FromWire(e.getCode());
      if (code == Status::Code::kOk) code = Status::Code::kInternal;
      std::string message = ToString(e.getMessage());
      const Status::Reason reason = FromWire(e.getReason(), code, message);
      r.body = ErrorResponse{code, std::move(message), reason};
      break;
    }
    case wire::Response::Body::PING:
      r.body = PingResponse{};
      break;
    case wire::Response::Body::GET: {
      auto g = body.getGet();
      r.body = GetResponse{g.getFound(), ToString(g.getValue()), g.getTs(), g.getExpiresAtMs(),
                           KindFromWire(g.getKind())};
      break;
    }
    case wire::Response::Body::PUT:
      r.body = PutResponse{body.getPut().getTs()};
      break;
    case wire::Response::Body::DELETE:
      r.body = DeleteResponse{body.getDelete().getTs()};
      break;
    case wire::Response::Body::INCR:
      r.body = IncrResponse{body.getIncr()};
      break;
    case wire::Response::Body::HASH_WRITE:
      r.body = HashWriteResponse{body.getHashWrite()};
      break;
    case wire::Response::Body::HASH_READ: {
      auto h = body.getHashRead();
      HashReadResponse out{h.getFound(), {}, h.getExpiresAtMs()};
      out.fields.reserve(h.getFields().size());
      for (auto f : h.getFields()) {
        out.fields.push_back(HashFieldValue{ToString(f.getName()), ToString(f.getValue())});
      }
      r.body = std::move(out);
      break;
    }
    case wire::Response::Body::SET_WRITE:
      r.body = SetWriteResponse{body.getSetWrite()};
      break;
    case wire::Response::Body::SET_READ: {
      auto s = body.getSetRead();
      SetReadResponse out{s.getFound(), {}, s.getExpiresAtMs()};
      out.members.reserve(s.getMembers().size());
      for (auto m : s.getMembers()) out.members.push_back(ToString(m));
      r.body = std::move(out);
      break;
    }
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
        } else if (v.isText()) {
          s.info[ToString(stat.getName())] = ToString(v.getText());
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
    case wire::Response::Body::REPLICA_WRITE_BATCH: {
      ReplicaWriteBatchResponse batch;
      batch.results.reserve(body.getReplicaWriteBatch().size());
      for (auto it : body.getReplicaWriteBatch()) {
        ReplicaWriteResult res;
        res.outcome = it.getOutcome();
        if (it.getCode() != wire::ErrorCode::OK) {
          const Status::Code code = FromWire(it.getCode());
          std::string message = ToString(it.getMessage());
          const Status::Reason reason = FromWire(it.getReason(), code, message);
          res.status = Status(code, reason, std::move(message));
        }
        batch.results.push_back(std::move(res));
      }
      r.body = std::move(batch);
      break;
    }
    case wire::Response::Body::REPLICA_READ: {
      auto rr = body.getReplicaRead();
      ReplicaReadResponse read;
      read.found = rr.getFound();
      ReadVersion(rr, &read);
      r.body = std::move(read);
      break;
    }
    case wire::Response::Body::INSTALL_MAP: {
      auto m = body.getInstallMap();
      r.body = InstallMapResponse{m.getAccepted(), m.getEpoch()};
      break;
    }
    case wire::Response::Body::STREAM_SCAN:
      r.body = ReadStreamScan(body.getStreamScan());
      break;
    case wire::Response::Body::STREAM_RANGE:
      r.body = ReadStreamRange(body.getStreamRange());
      break;
    case wire::Response::Body::COUNT_RANGES:
      r.body = ReadCountRanges(body.getCountRanges());
      break;
    case wire::Response::Body::ADMIN:
      return Status::NotSupported(
          "the node answered with a shardkv 0.1.0 text change report; upgrade the node");
    case wire::Response::Body::CHANGE_REPORT: {
      auto report = DecodeChangeReport(body.getChangeReport());
      if (!report.ok()) return report.status();
      r.body = std::move(*report);
      break;
    }
    case wire::Response::Body::SCAN:
      r.body = ReadScan(body.getScan());
      break;
    case wire::Response::Body::REPLICA_SCAN:
      r.body = ReadReplicaScan(body.getReplicaScan());
      break;
    case wire::Response::Body::ANTI_ENTROPY: {
      auto ae = ReadAntiEntropy(body.getAntiEntropy());
      if (!ae.ok()) return ae.status();
      r.body = std::move(*ae);
      break;
    }
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
    StatusOr<Result> result = read(reader.getRoot<Root>());
    ReleaseLargeAlignedWords();
    return result;
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
