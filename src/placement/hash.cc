#include "shardkv/hash.h"

#include <openssl/md5.h>
#include <xxhash.h>

#include <cstring>

namespace shardkv::hash {
namespace {

// Table-driven reflected CRC-32 (polynomial 0xEDB88320), built once at compile time.
constexpr std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = MakeCrcTable();

uint64_t Widen32(uint32_t h) { return (static_cast<uint64_t>(h) << 32) | h; }

}  // namespace

uint64_t Xxh3(std::string_view data) { return XXH3_64bits(data.data(), data.size()); }

uint64_t Xxh3(std::string_view data, uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

uint32_t Crc32(std::string_view data) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t Fmix32(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}

uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

uint32_t Fnv1a32(std::string_view data) {
  uint32_t h = 2166136261u;
  for (unsigned char b : data) {
    h ^= b;
    h *= 16777619u;
  }
  return h;
}

uint64_t Fnv1a64(std::string_view data) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char b : data) {
    h ^= b;
    h *= 1099511628211ull;
  }
  return h;
}

std::array<uint8_t, 16> Md5(std::string_view data) {
  std::array<uint8_t, 16> out{};
  // MD5() is deprecated in OpenSSL 3 in favour of EVP, but it is a one-shot, allocation-free
  // call and the digest is identical; the EVP path costs a context allocation per key.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  MD5(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data());
#pragma GCC diagnostic pop
  return out;
}

int HashBits(HashKind kind) {
  switch (kind) {
    case HashKind::kCrc32:
    case HashKind::kCrc32Fmix32:
    case HashKind::kFnv1a32:
      return 32;
    default:
      return 64;
  }
}

uint64_t Hash64(HashKind kind, std::string_view data) {
  switch (kind) {
    case HashKind::kXxh3:
      return Xxh3(data);
    case HashKind::kCrc32:
      return Widen32(Crc32(data));
    case HashKind::kCrc32Fmix32:
      return Widen32(Fmix32(Crc32(data)));
    case HashKind::kFnv1a32:
      return Widen32(Fnv1a32(data));
    case HashKind::kFnv1a64:
      return Fnv1a64(data);
    case HashKind::kMd5: {
      auto d = Md5(data);
      uint64_t v = 0;
      for (int i = 7; i >= 0; --i) v = (v << 8) | d[i];
      return v;
    }
  }
  return Xxh3(data);
}

StatusOr<HashKind> ParseHashKind(std::string_view name) {
  if (name == "xxh3") return HashKind::kXxh3;
  if (name == "crc32") return HashKind::kCrc32;
  if (name == "crc32-fmix32") return HashKind::kCrc32Fmix32;
  if (name == "fnv1a" || name == "fnv1a32") return HashKind::kFnv1a32;
  if (name == "fnv1a64") return HashKind::kFnv1a64;
  if (name == "md5") return HashKind::kMd5;
  return Status::InvalidArgument("unknown hash '" + std::string(name) +
                                 "' (expected xxh3, crc32, crc32-fmix32, fnv1a, fnv1a64, md5)");
}

std::string_view HashKindName(HashKind kind) {
  switch (kind) {
    case HashKind::kXxh3:
      return "xxh3";
    case HashKind::kCrc32:
      return "crc32";
    case HashKind::kCrc32Fmix32:
      return "crc32-fmix32";
    case HashKind::kFnv1a32:
      return "fnv1a";
    case HashKind::kFnv1a64:
      return "fnv1a64";
    case HashKind::kMd5:
      return "md5";
  }
  return "?";
}

}  // namespace shardkv::hash
