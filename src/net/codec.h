// Codec: Request/Response structs (messages.h) <-> framed Cap'n Proto bytes.
//
// Frame format: a 4-byte little-endian payload length, then the payload, which is one Cap'n
// Proto message in flat-array form (segment table + segments, exactly what
// capnp::messageToFlatArray produces). A payload is therefore always a positive multiple of 8
// bytes; FrameDecoder (frame_decoder.h) rejects any other length before buffering it.
//
// Decoding never throws and never trusts the input: Cap'n Proto's ReaderOptions bound the work
// (traversal limit) and pointer depth (nesting limit), every kj::Exception and std::exception is
// caught, and the result is a Status:
//   - Corruption: the bytes are not a well-formed message (bad segment table, out-of-bounds
//     pointer, limits exceeded, trailing garbage). The stream cannot be trusted any more.
//   - NotSupported: a well-formed message with an op this build does not know (a newer peer).
//     The stream is fine; only this request fails.
//
// Thread-safety: all functions are safe to call concurrently (they use thread-local scratch
// space to avoid per-call allocations).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/messages.h"
#include "shardkv/status.h"

namespace shardkv::net {

inline constexpr size_t kFrameHeaderBytes = 4;
inline constexpr size_t kDefaultMaxFrameBytes = size_t{64} << 20;  // 64 MiB

// Reusable per-thread and per-connection buffers keep at most this much memory between frames:
// one 16 MiB value must not pin 16 MiB in every thread and connection it passed through (node
// RSS grew to 1 GB after fifteen such puts and stayed there).
inline constexpr size_t kKeepBufferBytes = size_t{1} << 20;

// Empties `*s`, and gives its memory back if it grew beyond kKeepBufferBytes.
inline void ClearKeepingSmall(std::string* s) {
  if (s->capacity() > kKeepBufferBytes) {
    std::string().swap(*s);
  } else {
    s->clear();
  }
}

struct CodecOptions {
  // Upper bound on a frame's payload. Larger frames are refused by encoder and decoder.
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Cap'n Proto traversal limit in 8-byte words: bounds the total words a decode may visit,
  // including repeated visits through aliased pointers and lists of zero-sized elements, which
  // can claim millions of elements in a few bytes (amplification). 0 = per message, twice the
  // message's own size plus a little slack: a legitimate message visits each word about once.
  uint64_t traversal_limit_words = 0;
  // Cap'n Proto nesting limit: maximum pointer depth. The schema needs 4; the slack is for
  // future ops.
  int nesting_limit = 16;
};

// Appends one frame (length prefix + payload) holding `request` to `*out`.
// Returns InvalidArgument (and leaves `*out` unchanged) if the payload would exceed
// options.max_frame_bytes.
[[nodiscard]] Status EncodeRequest(const Request& request, std::string* out,
                                   const CodecOptions& options = {});
[[nodiscard]] Status EncodeResponse(const Response& response, std::string* out,
                                    const CodecOptions& options = {});

// Decodes one frame payload (the bytes after the length prefix, as FrameDecoder yields them).
// The payload need not be aligned. If `request_id` is non-null it receives the request's id
// whenever the header could be read, even if the body could not (so the caller can answer that
// request with an error); otherwise it is set to 0.
[[nodiscard]] StatusOr<Request> DecodeRequest(std::string_view payload,
                                              const CodecOptions& options = {},
                                              uint64_t* request_id = nullptr);
[[nodiscard]] StatusOr<Response> DecodeResponse(std::string_view payload,
                                                const CodecOptions& options = {});

}  // namespace shardkv::net
