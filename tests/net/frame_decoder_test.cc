#include "net/frame_decoder.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "net/codec.h"

namespace shardkv::net {
namespace {

std::string LengthPrefix(uint32_t n) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}

std::string Frames(int count) {
  std::string out;
  for (int i = 0; i < count; ++i) {
    Request r;
    r.id = static_cast<uint64_t>(i + 1);
    r.body = PutRequest{uint64_t(i), "key" + std::to_string(i), std::string(i * 37, 'v')};
    REQUIRE(EncodeRequest(r, &out).ok());
  }
  return out;
}

std::vector<uint64_t> DrainIds(FrameDecoder& d) {
  std::vector<uint64_t> ids;
  std::string_view payload;
  while (d.Next(&payload)) {
    auto r = DecodeRequest(payload);
    REQUIRE(r.ok());
    ids.push_back(r->id);
  }
  return ids;
}

}  // namespace

TEST_CASE("frame decoder: byte-by-byte feeding yields every frame once", "[net][frame]") {
  const std::string bytes = Frames(20);
  FrameDecoder d;
  std::vector<uint64_t> ids;
  for (char c : bytes) {
    d.Append(std::string_view(&c, 1));
    for (uint64_t id : DrainIds(d)) ids.push_back(id);
    REQUIRE(d.status().ok());
  }
  REQUIRE(ids.size() == 20);
  for (size_t i = 0; i < ids.size(); ++i) CHECK(ids[i] == i + 1);
  CHECK_FALSE(d.MidFrame());
  CHECK(d.BufferedBytes() == 0);
}

TEST_CASE("frame decoder: arbitrary chunk sizes", "[net][frame]") {
  const std::string bytes = Frames(50);
  for (size_t chunk : {size_t{3}, size_t{7}, size_t{64}, size_t{1000}, bytes.size()}) {
    FrameDecoder d;
    std::vector<uint64_t> ids;
    for (size_t off = 0; off < bytes.size(); off += chunk) {
      d.Append(std::string_view(bytes).substr(off, chunk));
      for (uint64_t id : DrainIds(d)) ids.push_back(id);
    }
    INFO("chunk " << chunk);
    CHECK(ids.size() == 50);
    CHECK(d.status().ok());
  }
}

TEST_CASE("frame decoder: zero-copy PrepareWrite/CommitWrite", "[net][frame]") {
  const std::string bytes = Frames(10);
  FrameDecoder d;
  size_t off = 0;
  std::vector<uint64_t> ids;
  while (off < bytes.size()) {
    std::span<char> space = d.PrepareWrite(100);
    REQUIRE(space.size() >= 100);
    const size_t n = std::min<size_t>(100, bytes.size() - off);
    std::memcpy(space.data(), bytes.data() + off, n);
    d.CommitWrite(n);
    off += n;
    for (uint64_t id : DrainIds(d)) ids.push_back(id);
  }
  CHECK(ids.size() == 10);
}

TEST_CASE("frame decoder: MidFrame tracks an incomplete frame", "[net][frame]") {
  const std::string bytes = Frames(1);
  FrameDecoder d;
  CHECK_FALSE(d.MidFrame());
  d.Append(std::string_view(bytes).substr(0, 2));
  CHECK(d.MidFrame());
  d.Append(std::string_view(bytes).substr(2, bytes.size() - 3));
  std::string_view payload;
  CHECK_FALSE(d.Next(&payload));
  CHECK(d.MidFrame());
  d.Append(std::string_view(bytes).substr(bytes.size() - 1));
  CHECK(d.Next(&payload));
  CHECK_FALSE(d.MidFrame());
}

TEST_CASE("frame decoder: bad lengths are sticky errors", "[net][frame]") {
  std::string_view payload;
  SECTION("zero") {
    FrameDecoder d;
    d.Append(LengthPrefix(0));
    CHECK_FALSE(d.Next(&payload));
    CHECK(d.status().code() == Status::Code::kInvalidArgument);
  }
  SECTION("not a whole number of words") {
    FrameDecoder d;
    d.Append(LengthPrefix(13));
    CHECK_FALSE(d.Next(&payload));
    CHECK_FALSE(d.status().ok());
  }
  SECTION("ASCII garbage reads as a huge length") {
    FrameDecoder d;
    d.Append("GET / HTTP/1.1\r\n\r\n");
    CHECK_FALSE(d.Next(&payload));
    CHECK_FALSE(d.status().ok());
    d.Append(Frames(1));  // ignored once broken
    CHECK_FALSE(d.Next(&payload));
    CHECK_FALSE(d.MidFrame());
  }
  SECTION("oversized: refused from the 4 header bytes alone, nothing reserved") {
    FrameDecoder d(1024);
    d.Append(LengthPrefix(1032));
    CHECK_FALSE(d.Next(&payload));
    CHECK(d.status().message().find("1032") != std::string::npos);
    CHECK(d.BufferedBytes() == 4);

    FrameDecoder big;  // default 64 MiB limit
    big.Append(LengthPrefix(0xFFFFFFF8u));
    CHECK_FALSE(big.Next(&payload));
    CHECK_FALSE(big.status().ok());
    CHECK(big.BufferedBytes() == 4);
  }
  SECTION("the limit itself is allowed") {
    FrameDecoder d(1024);
    d.Append(LengthPrefix(1024));
    CHECK_FALSE(d.Next(&payload));
    CHECK(d.status().ok());
    CHECK(d.MidFrame());
  }
}

TEST_CASE("frame decoder: Reset clears an error", "[net][frame]") {
  FrameDecoder d;
  d.Append(LengthPrefix(0));
  std::string_view payload;
  CHECK_FALSE(d.Next(&payload));
  REQUIRE_FALSE(d.status().ok());
  d.Reset();
  CHECK(d.status().ok());
  d.Append(Frames(2));
  CHECK(DrainIds(d).size() == 2);
}

TEST_CASE("frame decoder: a large frame is read whole into place and its memory given back",
          "[net][frame]") {
  Request big;
  big.id = 7;
  big.body = PutRequest{1, "big", std::string(size_t{4} << 20, 'v')};
  std::string bytes;
  REQUIRE(EncodeRequest(big, &bytes).ok());
  bytes += Frames(1);

  FrameDecoder d;
  // As a socket reader does: small reads, each into the decoder's own buffer.
  size_t at = 0;
  size_t largest_capacity = 0;
  std::vector<std::string_view> payloads;
  std::vector<uint64_t> ids;
  while (at < bytes.size()) {
    std::span<char> space = d.PrepareWrite(64 * 1024);
    const size_t n = std::min(space.size(), bytes.size() - at);
    std::memcpy(space.data(), bytes.data() + at, n);
    d.CommitWrite(n);
    at += n;
    largest_capacity = std::max(largest_capacity, d.BufferCapacity());
    std::string_view payload;
    while (d.Next(&payload)) {
      // The payload of a frame that starts the buffer is word-aligned: the codec reads it in
      // place rather than copying 4 MiB to aligned memory.
      if (payload.size() > 1024) {
        CHECK(reinterpret_cast<uintptr_t>(payload.data()) % 8 == 0);
      }
      auto r = DecodeRequest(payload);
      REQUIRE(r.ok());
      ids.push_back(r->id);
    }
  }
  CHECK(ids == std::vector<uint64_t>{7, 1});
  // The buffer grew once, to the frame's size, not by doubling past it.
  CHECK(largest_capacity < bytes.size() + 128 * 1024);
  // The next read gives back what the large frame took.
  (void)d.PrepareWrite(64 * 1024);
  CHECK(d.BufferCapacity() <= kKeepBufferBytes);
}

}  // namespace shardkv::net
