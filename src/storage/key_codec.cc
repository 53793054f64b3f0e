#include "storage/key_codec.h"

namespace shardkv::storage {

void AppendBigEndian32(std::string* dst, uint32_t v) {
  char buf[4];
  for (int i = 3; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  dst->append(buf, sizeof(buf));
}

void AppendBigEndian64(std::string* dst, uint64_t v) {
  char buf[8];
  for (int i = 7; i >= 0; --i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  dst->append(buf, sizeof(buf));
}

uint32_t ReadBigEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

uint64_t ReadBigEndian64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

std::string TokenKey(uint64_t token) {
  std::string out;
  AppendBigEndian64(&out, token);
  return out;
}

void AppendDataKey(std::string* dst, uint64_t token, std::string_view user_key) {
  dst->reserve(dst->size() + kTokenBytes + user_key.size());
  AppendBigEndian64(dst, token);
  dst->append(user_key);
}

std::string EncodeDataKey(uint64_t token, std::string_view user_key) {
  std::string out;
  AppendDataKey(&out, token, user_key);
  return out;
}

bool DecodeDataKey(std::string_view stored, uint64_t* token, std::string_view* user_key) {
  if (stored.size() < kTokenBytes) return false;
  *token = ReadBigEndian64(stored.data());
  *user_key = stored.substr(kTokenBytes);
  return true;
}

std::string EncodeHintKey(uint32_t target_node, uint64_t token, uint64_t seq) {
  std::string out;
  out.reserve(kHintKeyBytes);
  AppendBigEndian32(&out, target_node);
  AppendBigEndian64(&out, token);
  AppendBigEndian64(&out, seq);
  return out;
}

std::string HintTargetPrefix(uint32_t target_node) {
  std::string out;
  AppendBigEndian32(&out, target_node);
  return out;
}

bool DecodeHintKey(std::string_view stored, uint32_t* target_node, uint64_t* token, uint64_t* seq) {
  if (stored.size() != kHintKeyBytes) return false;
  *target_node = ReadBigEndian32(stored.data());
  *token = ReadBigEndian64(stored.data() + 4);
  *seq = ReadBigEndian64(stored.data() + 12);
  return true;
}

}  // namespace shardkv::storage
