#include "placement_lab/key_set.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "placement_lab/int_pattern.h"

namespace shardkv::lab {

void KeySet::Append(std::string_view key) {
  data_.append(key);
  Seal();
}

KeySet KeySet::FromKeys(const std::vector<std::string>& keys) {
  KeySet set;
  for (const std::string& k : keys) set.Append(k);
  set.description_ = std::to_string(keys.size()) + " explicit keys";
  return set;
}

StatusOr<KeySet> KeySet::Generate(const KeySpec& spec) {
  if (spec.source == KeySpec::Source::kFile) return FromFile(spec);

  uint64_t count = spec.count.value_or(KeySpec::kDefaultCount);
  if (count == 0) return Status::InvalidArgument("--keys must be at least 1");
  if (count > kMaxKeys) {
    return Status::InvalidArgument("--keys " + std::to_string(count) + " is above the limit of " +
                                   std::to_string(kMaxKeys));
  }
  bool random = spec.source == KeySpec::Source::kRandom;
  std::string pattern_text = spec.pattern;
  if (pattern_text.empty()) {
    pattern_text = random ? KeySpec::kDefaultRandomPattern : KeySpec::kDefaultPattern;
  }
  StatusOr<IntPattern> pattern = IntPattern::Parse(pattern_text);
  if (!pattern.ok()) return pattern.status().WithContext("--key-pattern");

  KeySet set;
  set.offsets_.reserve(count + 1);
  // Sizing the buffer from the last key's length avoids regrowing a 20+ MB string repeatedly.
  set.data_.reserve(count * (pattern->Format(count - 1).size() + 1));
  if (random) {
    // mt19937_64 is fully specified by the standard, so the keys are the same on every platform.
    std::mt19937_64 rng(spec.seed);
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t v = rng();
      // A signed conversion gets 63 bits so that no key is printed negative.
      pattern->AppendTo(pattern->is_signed() ? v >> 1 : v, &set.data_);
      set.Seal();
    }
    set.description_ = std::to_string(count) + " random keys (" + pattern_text + ", seed " +
                       std::to_string(spec.seed) + ")";
  } else {
    for (uint64_t i = 0; i < count; ++i) {
      pattern->AppendTo(i, &set.data_);
      set.Seal();
    }
    set.description_ = std::to_string(count) + " keys (" + pattern_text + ", 0.." +
                       std::to_string(count - 1) + ")";
  }
  return set;
}

StatusOr<KeySet> KeySet::FromFile(const KeySpec& spec) {
  if (spec.count && *spec.count == 0) return Status::InvalidArgument("--keys must be at least 1");
  std::error_code ec;
  if (std::filesystem::is_directory(spec.file, ec)) {
    return Status::InvalidArgument("key file '" + spec.file + "' is a directory");
  }
  std::ifstream in(spec.file, std::ios::binary);
  if (!in) {
    return Status::IOError("cannot open key file '" + spec.file + "': " + std::strerror(errno));
  }
  KeySet set;
  uint64_t limit = spec.count.value_or(kMaxKeys);
  std::string line;
  while (set.size() < limit && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    set.Append(line);
  }
  if (in.bad()) return Status::IOError("error reading key file '" + spec.file + "'");
  if (set.size() == 0) {
    return Status::InvalidArgument("key file '" + spec.file + "' has no keys");
  }
  set.description_ = std::to_string(set.size()) + " keys from " + spec.file;
  return set;
}

}  // namespace shardkv::lab
