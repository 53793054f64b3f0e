#include "net/frame_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace shardkv::net {
namespace {

// Initial buffer size: most frames (point ops) are far smaller, so one allocation per
// connection usually serves its whole life.
constexpr size_t kInitialBufferBytes = 16 * 1024;
// A frame that starts this far into the buffer has its payload on an 8-byte boundary (the
// length prefix is 4 bytes), so the codec reads a large message in place instead of copying it
// to aligned memory first. Frames are whole words, so this holds for every frame that starts a
// buffer: after a reset, a drain, or a compaction.
constexpr size_t kPayloadAlignOffset = kFrameHeaderBytes;

uint32_t LoadLe32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 | uint32_t{u[3]} << 24;
}

}  // namespace

FrameDecoder::FrameDecoder(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

void FrameDecoder::Append(std::string_view chunk) {
  if (!status_.ok() || chunk.empty()) return;
  std::span<char> space = PrepareWrite(chunk.size());
  std::memcpy(space.data(), chunk.data(), chunk.size());
  CommitWrite(chunk.size());
}

std::span<char> FrameDecoder::PrepareWrite(size_t min_bytes) {
  if (begin_ == end_) {
    // Nothing buffered: reuse from the start, but give back what one large frame made the
    // buffer grow to (a 16 MiB value would otherwise pin 32 MiB per connection for its life).
    if (buf_.size() > kKeepBufferBytes) std::vector<char>().swap(buf_);
    begin_ = end_ = kPayloadAlignOffset;
  }
  if (buf_.size() < end_ + min_bytes) Compact(min_bytes);
  return std::span<char>(buf_.data() + end_, buf_.size() - end_);
}

void FrameDecoder::CommitWrite(size_t n) { end_ = std::min(end_ + n, buf_.size()); }

void FrameDecoder::Compact(size_t need_free) {
  // Move the unconsumed bytes to the front first; grow only if that is not enough.
  if (begin_ > kPayloadAlignOffset) {
    std::memmove(buf_.data() + kPayloadAlignOffset, buf_.data() + begin_, end_ - begin_);
    end_ -= begin_ - kPayloadAlignOffset;
    begin_ = kPayloadAlignOffset;
  }
  // Once a frame's length is known, room for all of it is made at once: no doubling and
  // copying on the way to 16 MiB (the length was validated by Next() or is checked there).
  const size_t buffered = end_ - begin_;
  if (buffered >= kFrameHeaderBytes) {
    const size_t length = LoadLe32(buf_.data() + begin_);
    if (length <= max_frame_bytes_ && kFrameHeaderBytes + length > buffered) {
      need_free = std::max(need_free, kFrameHeaderBytes + length - buffered);
    }
  }
  if (buf_.size() >= end_ + need_free) return;
  size_t want = std::max(kInitialBufferBytes, buf_.size() * 2);
  want = std::max(want, end_ + need_free);
  buf_.resize(want);
}

void FrameDecoder::Reset() {
  begin_ = end_ = kPayloadAlignOffset;
  status_ = Status::OK();
}

bool FrameDecoder::CheckLength(size_t length) {
  if (length == 0 || length % 8 != 0 || length > max_frame_bytes_) {
    status_ = Status::InvalidArgument("bad frame length " + std::to_string(length) +
                                      " (must be a positive multiple of 8, at " + "most " +
                                      std::to_string(max_frame_bytes_) + ")");
    return false;
  }
  return true;
}

bool FrameDecoder::Next(std::string_view* payload) {
  if (!status_.ok()) return false;
  const size_t avail = end_ - begin_;
  if (avail < kFrameHeaderBytes) return false;
  const size_t length = LoadLe32(buf_.data() + begin_);
  if (!CheckLength(length)) return false;
  if (avail - kFrameHeaderBytes < length) return false;
  *payload = std::string_view(buf_.data() + begin_ + kFrameHeaderBytes, length);
  begin_ += kFrameHeaderBytes + length;
  return true;
}

}  // namespace shardkv::net
