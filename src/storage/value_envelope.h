// The value envelope stored under every data key: who wrote it, when, and whether it is a
// tombstone, around the user's value bytes.
//
// Encoding, format 1 (all multi-byte integers little-endian):
//
//   offset  size   field
//   0       1      format (= kEnvelopeFormatV1)
//   1       1      flags: bit 0 = tombstone; bits 1-7 reserved, must be 0
//   2       8      HLC timestamp (fixed64)
//   10      1..5   writer node id (varint32: 1 byte for ids < 128)
//   ...     rest   value bytes (empty for a tombstone)
//
// So the header costs 11 bytes for small clusters. The leading format byte lets a later build
// add fields (say, a TTL) under format 2 while still reading format 1; this build refuses any
// other format with NotSupported rather than guess, and reserved flag bits with Corruption.
//
// Ordering: versions compare as (timestamp, node_id) lexicographically; the larger wins (LWW).
// Equal timestamps from different coordinators are broken by node id, so every replica picks the
// same winner; an identical (timestamp, node_id) is the same write, applied at most once.
//
// Pure functions and value types; thread-safe.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "shardkv/status.h"

namespace shardkv::storage {

inline constexpr uint8_t kEnvelopeFormatV1 = 1;
inline constexpr uint8_t kEnvelopeFlagTombstone = 0x01;
// Smallest possible encoding: format, flags, timestamp and a 1-byte node id.
inline constexpr size_t kEnvelopeMinBytes = 1 + 1 + 8 + 1;

// The LWW order key of a write.
struct Version {
  uint64_t timestamp = 0;
  uint32_t node_id = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
};

// A decoded envelope that owns its value.
struct Envelope {
  uint64_t timestamp = 0;
  uint32_t node_id = 0;
  bool tombstone = false;
  std::string value;  // empty when tombstone

  Version version() const { return {timestamp, node_id}; }
  friend bool operator==(const Envelope&, const Envelope&) = default;
};

// A decoded envelope whose value views into the encoded bytes.
struct EnvelopeView {
  uint64_t timestamp = 0;
  uint32_t node_id = 0;
  bool tombstone = false;
  std::string_view value;

  Version version() const { return {timestamp, node_id}; }
  Envelope ToEnvelope() const { return {timestamp, node_id, tombstone, std::string(value)}; }
};

// Appends the encoding to *out. REQUIRES: value is empty if tombstone.
void EncodeEnvelope(Version version, bool tombstone, std::string_view value, std::string* out);
std::string EncodeEnvelope(const Envelope& envelope);

// Parses `encoded`. NotSupported for an unknown format byte; Corruption for truncation, reserved
// flags or a tombstone carrying value bytes. On success view->value points into `encoded`.
[[nodiscard]] Status DecodeEnvelope(std::string_view encoded, EnvelopeView* view);

}  // namespace shardkv::storage
