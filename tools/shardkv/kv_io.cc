#include "kv_io.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "kv_limits.h"
#include "shardkv/client.h"

namespace shardkv::cli {

std::string HumanLimit(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= (size_t{1} << 10) && bytes % (size_t{1} << 10) == 0) {
    return std::to_string(bytes >> 10) + " KiB";
  }
  return std::to_string(bytes) + " bytes";
}

std::string ValueTooLarge(size_t size, size_t limit) {
  if (size <= limit) return "";
  return "value is larger than the " + HumanLimit(limit) + " limit";
}

StatusOr<std::string> ReadValueBounded(int fd, size_t limit) {
  std::string out;
  constexpr size_t kChunk = size_t{1} << 16;
  for (;;) {
    // One byte past the limit is enough to know the value is too big.
    const size_t want = std::min(kChunk, limit + 1 - out.size());
    const size_t have = out.size();
    out.resize(have + want);
    const ssize_t n = ::read(fd, out.data() + have, want);
    if (n < 0 && errno == EINTR) {
      out.resize(have);
      continue;
    }
    if (n < 0) return Status::IOError(std::string("reading the value: ") + std::strerror(errno));
    out.resize(have + static_cast<size_t>(n));
    if (n == 0) return out;
    if (out.size() > limit) return Status::InvalidArgument(ValueTooLarge(out.size(), limit));
  }
}

std::string CheckHostPort(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  Status s = ParseHostPort(address, &host, &port);
  return s.ok() ? "" : s.message();
}

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, cp = c & 0x07;
    } else {
      return false;  // a continuation byte first, an overlong 2-byte lead, or past U+10FFFF
    }
    if (i + len > s.size()) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return false;
    if (cp >= 0xD800 && cp <= 0xDFFF) return false;  // surrogates are not characters
    i += len;
  }
  return true;
}

std::string Base64Encode(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = (uint32_t{static_cast<unsigned char>(bytes[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8) |
                       static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  const size_t rest = bytes.size() - i;
  if (rest > 0) {
    uint32_t v = uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
    if (rest == 2) v |= uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string CheckKey(const std::string& key) {
  if (key.empty()) return "key is empty";
  if (key.size() > limits::kMaxKeyBytes) {
    return "key is " + std::to_string(key.size()) + " bytes; the limit is " +
           std::to_string(limits::kMaxKeyBytes);
  }
  return "";
}

void BytesField(JsonWriter& w, std::string_view name, std::string_view bytes) {
  if (IsValidUtf8(bytes)) {
    w.Field(name, bytes);
  } else {
    w.Field(std::string(name) + "_base64", Base64Encode(bytes));
  }
}

std::string MutationErrorJson(std::string_view key, MutationOutcome outcome, const Status& error) {
  JsonWriter w;
  w.Begin();
  BytesField(w, "key", key);
  w.Field("outcome", MutationOutcomeName(outcome));
  w.Field("error", error.message().empty() ? error.ToString() : error.message());
  w.End();
  return w.str();
}

}  // namespace shardkv::cli
