// libFuzzer target: arbitrary bytes through FrameDecoder (in arbitrary chunk sizes) and every
// complete frame through DecodeRequest and DecodeResponse. Properties checked besides "no
// crash, no sanitizer report": a request that decodes re-encodes, and decodes again to the
// same header and op.
//
// Input layout: byte 0 picks the chunk size (1-64) the stream is fed in; the rest is the stream.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/codec.h"
#include "net/frame_decoder.h"

namespace {

using shardkv::net::DecodeRequest;
using shardkv::net::DecodeResponse;
using shardkv::net::EncodeRequest;
using shardkv::net::FrameDecoder;
using shardkv::net::OpName;
using shardkv::net::Request;

void CheckRoundTrip(const Request& request) {
  std::string framed;
  if (!EncodeRequest(request, &framed).ok()) __builtin_trap();
  auto again = DecodeRequest(std::string_view(framed).substr(shardkv::net::kFrameHeaderBytes));
  if (!again.ok()) __builtin_trap();
  if (again->id != request.id || again->epoch != request.epoch ||
      again->client_ts != request.client_ts || again->consistency != request.consistency ||
      OpName(again->body) != OpName(request.body)) {
    __builtin_trap();
  }
}

void DecodePayload(std::string_view payload) {
  auto request = DecodeRequest(payload);
  if (request.ok()) CheckRoundTrip(*request);
  (void)DecodeResponse(payload);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = 1 + data[0] % 64;
  std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  // Small frame limit: the fuzzer should explore structure, not allocate 64 MiB buffers.
  FrameDecoder decoder(size_t{1} << 20);
  for (size_t off = 0; off < stream.size(); off += chunk) {
    decoder.Append(stream.substr(off, chunk));
    std::string_view payload;
    while (decoder.Next(&payload)) DecodePayload(payload);
  }
  // The stream itself as one payload too, so mutations reach the codec without framing.
  DecodePayload(stream);
  return 0;
}
