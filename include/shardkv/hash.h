// Hash functions used for placement: the default (XXH3-64) and the ones the seed articles
// compared, so the placement lab can reproduce their findings.
//
// All functions are pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "shardkv/status.h"

namespace shardkv::hash {

enum class HashKind : unsigned char {
  kXxh3,         // XXH3-64 (libxxhash): the default for keys and vnode positions
  kCrc32,        // raw CRC-32 (IEEE): linear over GF(2), so structured inputs land on a lattice
  kCrc32Fmix32,  // CRC-32 then murmur3's fmix32 finalizer, which restores avalanche
  kFnv1a32,
  kFnv1a64,
  kMd5,  // first 8 bytes of the digest, little-endian
};

uint64_t Xxh3(std::string_view data);
uint64_t Xxh3(std::string_view data, uint64_t seed);
uint32_t Crc32(std::string_view data);
uint32_t Fmix32(uint32_t h);
uint64_t Fmix64(uint64_t h);
uint32_t Fnv1a32(std::string_view data);
uint64_t Fnv1a64(std::string_view data);
// MD5 from OpenSSL's libcrypto.
std::array<uint8_t, 16> Md5(std::string_view data);

// Width of the hash's native output: 32 or 64.
int HashBits(HashKind kind);

// The hash as a 64-bit ring position. A 32-bit hash h becomes (h << 32) | h: the order of
// positions is that of the 32-bit values (so a ring behaves exactly like a 32-bit ring), and the
// low bits are not all zero (so modulo and Jump still see entropy there).
uint64_t Hash64(HashKind kind, std::string_view data);

// "xxh3", "crc32", "crc32-fmix32", "fnv1a" (= fnv1a32), "fnv1a64", "md5".
StatusOr<HashKind> ParseHashKind(std::string_view name);
std::string_view HashKindName(HashKind kind);

}  // namespace shardkv::hash
