#include "storage/value_envelope.h"

namespace shardkv::storage {
namespace {

void AppendFixed64LE(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, sizeof(buf));
}

uint64_t ReadFixed64LE(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void AppendVarint32(std::string* out, uint32_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Returns the number of bytes consumed, or 0 if the varint is truncated or longer than 5 bytes.
size_t ReadVarint32(std::string_view in, uint32_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < in.size() && i < 5; ++i) {
    const auto byte = static_cast<unsigned char>(in[i]);
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      if (result > UINT32_MAX) return 0;
      *v = static_cast<uint32_t>(result);
      return i + 1;
    }
  }
  return 0;
}

}  // namespace

void EncodeEnvelope(Version version, bool tombstone, std::string_view value, std::string* out) {
  out->reserve(out->size() + kEnvelopeMinBytes + 4 + value.size());
  out->push_back(static_cast<char>(kEnvelopeFormatV1));
  out->push_back(static_cast<char>(tombstone ? kEnvelopeFlagTombstone : 0));
  AppendFixed64LE(out, version.timestamp);
  AppendVarint32(out, version.node_id);
  if (!tombstone) out->append(value);
}

std::string EncodeEnvelope(const Envelope& envelope) {
  std::string out;
  EncodeEnvelope(envelope.version(), envelope.tombstone, envelope.value, &out);
  return out;
}

Status DecodeEnvelope(std::string_view encoded, EnvelopeView* view) {
  if (encoded.empty()) return Status::Corruption("empty value envelope");
  const auto format = static_cast<uint8_t>(encoded[0]);
  if (format != kEnvelopeFormatV1) {
    return Status::NotSupported("value envelope format " + std::to_string(format) +
                                " is unknown to this build (it reads format " +
                                std::to_string(kEnvelopeFormatV1) + ")");
  }
  if (encoded.size() < kEnvelopeMinBytes) {
    return Status::Corruption("value envelope truncated: " + std::to_string(encoded.size()) +
                              " bytes");
  }
  const auto flags = static_cast<uint8_t>(encoded[1]);
  if ((flags & ~kEnvelopeFlagTombstone) != 0) {
    return Status::Corruption("value envelope has reserved flag bits set: " +
                              std::to_string(flags));
  }
  view->tombstone = (flags & kEnvelopeFlagTombstone) != 0;
  view->timestamp = ReadFixed64LE(encoded.data() + 2);
  const size_t n = ReadVarint32(encoded.substr(10), &view->node_id);
  if (n == 0) return Status::Corruption("value envelope has a malformed node id");
  view->value = encoded.substr(10 + n);
  if (view->tombstone && !view->value.empty()) {
    return Status::Corruption("tombstone envelope carries value bytes");
  }
  return Status::OK();
}

}  // namespace shardkv::storage
