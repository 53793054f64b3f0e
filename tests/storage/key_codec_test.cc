#include "storage/key_codec.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <random>
#include <vector>

namespace shardkv::storage {
namespace {

TEST_CASE("data keys are token big-endian then the user key", "[key_codec]") {
  const std::string k = EncodeDataKey(0x0102030405060708ULL, "user:1");
  CHECK(k == std::string("\x01\x02\x03\x04\x05\x06\x07\x08user:1", 14));

  uint64_t token = 0;
  std::string_view user_key;
  REQUIRE(DecodeDataKey(k, &token, &user_key));
  CHECK(token == 0x0102030405060708ULL);
  CHECK(user_key == "user:1");

  REQUIRE(DecodeDataKey(EncodeDataKey(UINT64_MAX, ""), &token, &user_key));
  CHECK(token == UINT64_MAX);
  CHECK(user_key.empty());

  CHECK_FALSE(DecodeDataKey(std::string(7, '\0'), &token, &user_key));
}

TEST_CASE("bytewise order of data keys is numeric token order", "[key_codec]") {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> tokens = {0, 1, 255, 256, UINT64_MAX - 1, UINT64_MAX, uint64_t{1} << 63};
  for (int i = 0; i < 1000; ++i) tokens.push_back(rng());
  std::vector<std::string> keys;
  for (uint64_t t : tokens) keys.push_back(EncodeDataKey(t, "k"));
  std::sort(tokens.begin(), tokens.end());
  std::sort(keys.begin(), keys.end());
  for (size_t i = 0; i < tokens.size(); ++i) {
    uint64_t token = 0;
    std::string_view user_key;
    REQUIRE(DecodeDataKey(keys[i], &token, &user_key));
    REQUIRE(token == tokens[i]);
  }
  // Any key of token t sorts before every key of token t+1, however long the user key.
  CHECK(EncodeDataKey(5, std::string(100, '\xff')) < TokenKey(6));
}

TEST_CASE("hint keys round-trip and group by target", "[key_codec]") {
  const std::string k = EncodeHintKey(7, 0xAABBCCDDEEFF0011ULL, 42);
  CHECK(k.size() == kHintKeyBytes);
  CHECK(k.starts_with(HintTargetPrefix(7)));
  uint32_t target = 0;
  uint64_t token = 0;
  uint64_t seq = 0;
  REQUIRE(DecodeHintKey(k, &target, &token, &seq));
  CHECK(target == 7);
  CHECK(token == 0xAABBCCDDEEFF0011ULL);
  CHECK(seq == 42);
  CHECK_FALSE(DecodeHintKey(k.substr(1), &target, &token, &seq));
  CHECK(EncodeHintKey(7, 1, 2) < EncodeHintKey(7, 1, 3));
  CHECK(EncodeHintKey(7, 1, UINT64_MAX) < EncodeHintKey(7, 2, 0));
  CHECK(EncodeHintKey(7, UINT64_MAX, UINT64_MAX) < EncodeHintKey(8, 0, 0));
}

TEST_CASE("TokenRange is inclusive at both ends", "[key_codec]") {
  const TokenRange all;
  CHECK(all.Valid());
  CHECK(all.Contains(0));
  CHECK(all.Contains(UINT64_MAX));
  const TokenRange one{UINT64_MAX, UINT64_MAX};
  CHECK(one.Contains(UINT64_MAX));
  CHECK_FALSE(one.Contains(UINT64_MAX - 1));
  CHECK_FALSE((TokenRange{5, 4}).Valid());
}

}  // namespace
}  // namespace shardkv::storage
