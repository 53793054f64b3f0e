#include "net/frame_decoder.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace shardkv::net {
namespace {

// Initial buffer size: most frames (point ops) are far smaller, so one allocation per
// connection usually serves its whole life.
constexpr size_t kInitialBufferBytes = 16 * 1024;

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
  if (begin_ == end_) begin_ = end_ = 0;  // nothing buffered: reuse from the start
  if (buf_.size() - end_ < min_bytes) Compact(min_bytes);
  return std::span<char>(buf_.data() + end_, buf_.size() - end_);
}

void FrameDecoder::CommitWrite(size_t n) { end_ = std::min(end_ + n, buf_.size()); }

void FrameDecoder::Compact(size_t need_free) {
  // Move the unconsumed bytes to the front first; grow only if that is not enough.
  if (begin_ > 0) {
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buf_.size() - end_ >= need_free) return;
  size_t want = std::max(kInitialBufferBytes, buf_.size() * 2);
  want = std::max(want, end_ + need_free);
  buf_.resize(want);
}

void FrameDecoder::Reset() {
  begin_ = end_ = 0;
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
