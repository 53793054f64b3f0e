// Storage key layouts (design.md "Storage format").
//
//   data  CF: token (8 bytes, big-endian) ‖ user key
//   hints CF: target node id (4 bytes, big-endian) ‖ token (8 bytes, big-endian) ‖ seq (8, BE)
//
// Big-endian tokens make RocksDB's bytewise order equal to numeric token order, so a token range
// [a, b] is one contiguous key range: everything a membership change moves is a range scan, a
// DeleteRange or a compaction over a contiguous interval.
//
// All functions are pure; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shardkv/token_range.h"

namespace shardkv::storage {

inline constexpr size_t kTokenBytes = 8;
inline constexpr size_t kHintKeyBytes = 4 + 8 + 8;

// Fixed-width big-endian integers.
void AppendBigEndian32(std::string* dst, uint32_t v);
void AppendBigEndian64(std::string* dst, uint64_t v);
// REQUIRES: p points at 4 (resp. 8) readable bytes.
uint32_t ReadBigEndian32(const char* p);
uint64_t ReadBigEndian64(const char* p);

// The 8-byte big-endian token: the smallest data key with that token.
std::string TokenKey(uint64_t token);

// token ‖ user_key.
std::string EncodeDataKey(uint64_t token, std::string_view user_key);
void AppendDataKey(std::string* dst, uint64_t token, std::string_view user_key);

// Splits a data key. Returns false if it is shorter than a token (corruption). `user_key` views
// into `stored`.
[[nodiscard]] bool DecodeDataKey(std::string_view stored, uint64_t* token,
                                 std::string_view* user_key);

// target ‖ token ‖ seq. Hints for one target are contiguous and ordered by token, then seq.
std::string EncodeHintKey(uint32_t target_node, uint64_t token, uint64_t seq);
// The 4-byte prefix shared by every hint for `target_node`.
std::string HintTargetPrefix(uint32_t target_node);
// Returns false unless `stored` is exactly kHintKeyBytes long.
[[nodiscard]] bool DecodeHintKey(std::string_view stored, uint32_t* target_node, uint64_t* token,
                                 uint64_t* seq);

}  // namespace shardkv::storage
