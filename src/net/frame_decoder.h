// FrameDecoder: splits a TCP byte stream into frames (codec.h "Frame format").
//
// Bytes go in as arbitrary chunks (Append, or PrepareWrite/CommitWrite to read from a socket
// straight into the decoder's buffer); complete frame payloads come out of Next(). The length
// prefix is validated as soon as its 4 bytes are present, before any payload is buffered: a
// length of 0, one that is not a multiple of 8 (a Cap'n Proto message is whole words), or one
// above max_frame_bytes puts the decoder in a sticky error state. Memory grows only with the
// bytes actually received, so a peer announcing a huge frame and then stalling costs nothing.
//
// Example:
//   FrameDecoder d;
//   d.Append(chunk);
//   std::string_view payload;
//   while (d.Next(&payload)) Handle(payload);
//   if (!d.status().ok()) { /* reply with d.status(), close the connection */ }
//
// Thread-safety: not thread-safe; one decoder per connection, used by one thread at a time.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>
#include <vector>

#include "net/codec.h"
#include "shardkv/status.h"

namespace shardkv::net {

// The buffer sizes of both ends of a connection (rpc_channel.cc, server_connection.cc): bytes a
// read asks the socket for at once, and the write buffer size past which a buffer grown for one
// big frame is released afterwards, so that idle connections do not pin large buffers.
inline constexpr size_t kReadChunkBytes = 16 * 1024;
inline constexpr size_t kKeepWriteBufferBytes = size_t{1} << 20;

class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_bytes = kDefaultMaxFrameBytes);
  FrameDecoder(const FrameDecoder&) = delete;
  FrameDecoder& operator=(const FrameDecoder&) = delete;

  // Copies `chunk` into the buffer. Ignored once in the error state.
  void Append(std::string_view chunk);

  // Zero-copy alternative to Append: returns writable space of at least `min_bytes` at the end
  // of the buffer; after writing n bytes into it, call CommitWrite(n). The span is invalidated
  // by any other call. REQUIRES: n <= the span's size.
  std::span<char> PrepareWrite(size_t min_bytes);
  void CommitWrite(size_t n);

  // If a complete frame is buffered, sets `*payload` to its payload and returns true. The view
  // stays valid until the next Append, PrepareWrite or Reset. Returns false when more bytes are
  // needed or the stream is broken; status() tells which.
  bool Next(std::string_view* payload);

  // OK, or why the stream is broken (InvalidArgument naming the bad length). Sticky.
  const Status& status() const { return status_; }

  // True if some bytes of an incomplete frame are buffered: EOF now would truncate a frame.
  bool MidFrame() const { return status_.ok() && end_ > begin_; }

  // Bytes received but not yet returned by Next().
  size_t BufferedBytes() const { return end_ - begin_; }
  // Those bytes themselves; valid until the next non-const call.
  std::string_view Buffered() const {
    return std::string_view(buf_.data() + begin_, end_ - begin_);
  }

  size_t max_frame_bytes() const { return max_frame_bytes_; }

  // Bytes of buffer memory held now (received or not): after a large frame is consumed, the next
  // read gives back all but a small buffer.
  size_t BufferCapacity() const { return buf_.size(); }

  // Forgets buffered bytes and any error (for a new connection). Keeps the buffer's memory.
  void Reset();

 private:
  // Validates the length prefix at begin_; sets status_ on error.
  bool CheckLength(size_t length);
  void Compact(size_t need_free);

  const size_t max_frame_bytes_;
  std::vector<char> buf_;
  size_t begin_ = 0;  // first unconsumed byte
  size_t end_ = 0;    // one past the last received byte
  Status status_;
};

}  // namespace shardkv::net
