// libFuzzer target: arbitrary bytes through ChangeRecord::Decode and ChangeReport::Decode (the
// Cap'n Proto form and the v0.1.0 key=value text). Properties checked besides "no crash, no
// sanitizer report, no exception": what decodes re-encodes, decodes again, and encodes to the
// same bytes (bytes, not operator==: the text form can carry a NaN).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "shardkv/change.h"

namespace {

template <typename T>
void CheckRoundTrip(const T& decoded) {
  const std::string once = decoded.Encode();
  auto again = T::Decode(once);
  if (!again.ok()) __builtin_trap();
  if (again->Encode() != once) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (auto record = shardkv::ChangeRecord::Decode(bytes); record.ok()) CheckRoundTrip(*record);
  if (auto report = shardkv::ChangeReport::Decode(bytes); report.ok()) CheckRoundTrip(*report);
  return 0;
}
