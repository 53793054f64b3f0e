// KeySet: the keys the placement lab measures, generated once and shared by every configuration.
//
// Keys live in one flat buffer with an offset table instead of a vector<string>: a million keys
// then cost about 27 MB instead of 32+ MB, with no per-key allocation, and a pass over them walks
// memory in order.
//
// Thread-safety: immutable after construction; concurrent readers are safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::lab {

// Where the keys come from. Exactly one source: a pattern over 0..count-1 (the default,
// "user:%d" like the seeds), random 64-bit numbers formatted by a pattern, or a file.
struct KeySpec {
  enum class Source : unsigned char { kPattern, kRandom, kFile };

  static constexpr uint64_t kDefaultCount = 1000000;
  static constexpr uint64_t kDefaultSeed = 42;
  static constexpr const char* kDefaultPattern = "user:%d";
  // Random keys look like the seed's "sess:<16 hex digits>".
  static constexpr const char* kDefaultRandomPattern = "sess:%016x";

  Source source = Source::kPattern;
  // Empty means the source's default pattern.
  std::string pattern;
  // Pattern and random: how many keys (default kDefaultCount). File: at most this many of the
  // file's keys; all of them when unset.
  std::optional<uint64_t> count;
  uint64_t seed = kDefaultSeed;  // random keys only: std::mt19937_64's seed
  std::string file;              // one key per line; '\r' before '\n' and empty lines dropped
};

class KeySet {
 public:
  // Upper bound on keys, so a typo like --keys 1e10 fails fast instead of exhausting memory.
  static constexpr uint64_t kMaxKeys = 5'000'000;  // about 10 s for all six algorithms

  // Errors: count 0 or above kMaxKeys; a bad pattern; a missing, unreadable or empty file.
  static StatusOr<KeySet> Generate(const KeySpec& spec);
  // Builds a set from explicit keys (tests).
  static KeySet FromKeys(const std::vector<std::string>& keys);

  size_t size() const { return offsets_.size() - 1; }
  std::string_view operator[](size_t i) const {
    return std::string_view(data_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  // One line for reports, e.g. "user:%d, 0..999999" or "file keys.txt".
  const std::string& description() const { return description_; }
  size_t MemoryBytes() const { return data_.capacity() + offsets_.capacity() * sizeof(uint64_t); }

 private:
  KeySet() : offsets_{0} {}
  void Append(std::string_view key);
  // Appends the key that the last write into data_ completed.
  void Seal() { offsets_.push_back(data_.size()); }

  std::string data_;
  std::vector<uint64_t> offsets_;  // key i is data_[offsets_[i], offsets_[i+1])
  std::string description_;

  static StatusOr<KeySet> FromFile(const KeySpec& spec);
};

}  // namespace shardkv::lab
