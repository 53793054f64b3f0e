#include "workload.h"

#include "shardkv/hash.h"

namespace shardkv::cli {

std::string WorkloadKey(const std::string& prefix, uint64_t i) {
  return prefix + std::to_string(i);
}

std::string WorkloadValue(uint64_t seed, const std::string& key, size_t size) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  out.reserve(size);
  uint64_t state = hash::Xxh3(key, seed);
  while (out.size() < size) {
    state = hash::Fmix64(state + 0x9e3779b97f4a7c15ull);
    uint64_t bits = state;
    for (int i = 0; i < 10 && out.size() < size; ++i, bits >>= 6) {
      out.push_back(kAlphabet[(bits & 63) % 36]);
    }
  }
  return out;
}

}  // namespace shardkv::cli
