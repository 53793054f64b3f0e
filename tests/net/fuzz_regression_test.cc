// Replays hand-made hostile inputs (and a seeded mutation run) through the same path as
// tests/fuzz/frame_decoder_fuzz.cc: FrameDecoder, then DecodeRequest and DecodeResponse. Every
// input must end in a Status, never a crash, a hang or a huge allocation.
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "net/codec.h"
#include "net/frame_decoder.h"

namespace shardkv::net {
namespace {

// One little-endian 64-bit word from two 32-bit halves.
std::string Word(uint32_t lo, uint32_t hi) {
  std::string w(8, '\0');
  for (int i = 0; i < 4; ++i) {
    w[i] = static_cast<char>(lo >> (8 * i));
    w[4 + i] = static_cast<char>(hi >> (8 * i));
  }
  return w;
}

// A single-segment flat message: segment table + `words`.
std::string Message(const std::vector<std::string>& words) {
  std::string body;
  for (const auto& w : words) body += w;
  return Word(0, static_cast<uint32_t>(body.size() / 8)) + body;
}

std::string Framed(const std::string& payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(n >> (8 * i));
  return out + payload;
}

// Struct pointer: offset (words after the pointer), data words, pointer count.
std::string StructPtr(int32_t offset, uint16_t data, uint16_t ptrs) {
  return Word(static_cast<uint32_t>(offset) << 2, data | uint32_t{ptrs} << 16);
}

// List pointer: offset, element size code (7 = composite), count (words if composite).
std::string ListPtr(int32_t offset, uint32_t size_code, uint32_t count) {
  return Word((static_cast<uint32_t>(offset) << 2) | 1, size_code | count << 3);
}

std::string FarPtr(uint32_t offset, uint32_t segment) { return Word(offset << 3 | 2, segment); }

// A Request root (5 data words, 1 pointer) whose body union tag is `tag`, followed by `ptr`.
std::vector<std::string> RequestWithBody(uint16_t tag, const std::string& ptr) {
  return {StructPtr(0, 5, 1),           Word(0, 0), Word(0, 0), Word(0, 0), Word(0, 0),
          Word(uint32_t{tag} << 16, 0), ptr};
}

// Runs one input through the fuzz target's path. Returns how many frames were decoded OK.
int Replay(const std::string& bytes, size_t chunk = 7) {
  FrameDecoder decoder(size_t{1} << 20);
  int ok = 0;
  for (size_t off = 0; off < bytes.size(); off += chunk) {
    decoder.Append(std::string_view(bytes).substr(off, chunk));
    std::string_view payload;
    while (decoder.Next(&payload)) {
      if (DecodeRequest(payload).ok()) ++ok;
      (void)DecodeResponse(payload);
    }
  }
  return ok;
}

Status DecodeOne(const std::string& payload) { return DecodeRequest(payload).status(); }

}  // namespace

TEST_CASE("fuzz regressions: hostile segment tables", "[net][fuzz]") {
  // Segment count field 0xFFFFFFFF (+1 wraps to 0 inside capnp) and a huge first segment.
  CHECK(DecodeOne(Word(0xFFFFFFFF, 1) + Word(0, 0)).code() == Status::Code::kCorruption);
  CHECK_FALSE(DecodeOne(Word(0, 0x7FFFFFFF) + Word(0, 0)).ok());
  // 1000 segments announced, 8 bytes present.
  CHECK_FALSE(DecodeOne(Word(999, 1) + Word(0, 0)).ok());
  // An empty first segment: no root pointer at all.
  CHECK_FALSE(DecodeOne(Word(0, 0)).ok());
}

TEST_CASE("fuzz regressions: hostile pointers", "[net][fuzz]") {
  // Far pointer into a segment that does not exist.
  CHECK(DecodeOne(Message({FarPtr(0, 5)})).code() == Status::Code::kCorruption);
  // Far pointer whose landing pad is itself.
  CHECK(DecodeOne(Message({FarPtr(0, 0)})).code() == Status::Code::kCorruption);
  // Struct pointer far out of bounds, and one pointing backwards before the segment.
  CHECK(DecodeOne(Message({StructPtr(1000, 1, 0)})).code() == Status::Code::kCorruption);
  CHECK(DecodeOne(Message({StructPtr(-5, 1, 0)})).code() == Status::Code::kCorruption);
  // get {key} whose Data list claims 2^29-1 bytes that are not there.
  auto words = RequestWithBody(1, StructPtr(0, 1, 1));
  words.push_back(Word(0, 0));                 // KeyRef.token
  words.push_back(ListPtr(0, 2, 0x1FFFFFFF));  // KeyRef.key: byte list
  CHECK(DecodeOne(Message(words)).code() == Status::Code::kCorruption);
}

TEST_CASE("fuzz regressions: amplification is bounded", "[net][fuzz]") {
  // multiGet (tag 4): a composite list of 2^29-1 zero-sized KeyRefs in a 72-byte message.
  // Without a per-message traversal limit this would allocate hundreds of millions of keys.
  auto words = RequestWithBody(4, ListPtr(0, 7, 0));
  words.push_back(Word((0x1FFFFFFFu) << 2, 0));  // tag word: element count, 0 data, 0 ptrs
  Status st = DecodeOne(Message(words));
  CHECK(st.code() == Status::Code::kCorruption);

  // multiPut (tag 5) whose list pointer points back into the root struct (aliasing): either
  // a clean decode or Corruption, nothing else.
  auto alias = RequestWithBody(5, ListPtr(-7, 7, 6));
  Status aliased = DecodeOne(Message(alias));
  CHECK((aliased.ok() || aliased.code() == Status::Code::kCorruption));
}

TEST_CASE("fuzz regressions: hostile frame streams", "[net][fuzz]") {
  CHECK(Replay(std::string("\xff\xff\xff\xff", 4) + std::string(100, 'x')) == 0);
  CHECK(Replay(std::string(4, '\0')) == 0);
  CHECK(Replay(Framed(Word(0xFFFFFFFF, 1) + Word(0, 0))) == 0);
  CHECK(Replay(Framed(Message({FarPtr(0, 0)}))) == 0);
  // A valid frame after a broken one is never reached: the stream is dead.
  std::string good;
  Request r;
  r.id = 1;
  REQUIRE(EncodeRequest(r, &good).ok());
  CHECK(Replay(good + good) == 2);
  CHECK(Replay(std::string(4, '\0') + good) == 0);
}

TEST_CASE("fuzz regressions: seeded byte mutations of valid frames", "[net][fuzz]") {
  std::string seed;
  Request r;
  r.id = 7;
  r.epoch = 3;
  MultiPutRequest m;
  for (int i = 0; i < 5; ++i) m.items.push_back({uint64_t(i), "key" + std::to_string(i), "v"});
  r.body = m;
  REQUIRE(EncodeRequest(r, &seed).ok());
  r.body = GetRequest{1, "k"};
  REQUIRE(EncodeRequest(r, &seed).ok());

  std::mt19937_64 rng(20240601);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string bytes = seed;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    Replay(bytes, 1 + rng() % 64);  // must simply return
  }
  SUCCEED();
}

}  // namespace shardkv::net
