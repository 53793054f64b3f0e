// libFuzzer target: arbitrary bytes through DecodeEnvelope (value_envelope.h, formats 1 to 5).
// Besides "no crash, no sanitizer report, no exception": an envelope that decodes converts to an
// owned Envelope, and one whose shape is valid re-encodes and decodes again to the same record,
// and is its own merge (Merge is idempotent on what the store keeps).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/value_envelope.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shardkv::storage;
  EnvelopeView view;
  if (!DecodeEnvelope(std::string_view(reinterpret_cast<const char*>(data), size), &view).ok()) {
    return 0;
  }
  const Envelope e = view.ToEnvelope();
  if (!ValidateEnvelopeShape(e).ok()) return 0;
  const std::string once = EncodeEnvelope(e);
  EnvelopeView again;
  if (!DecodeEnvelope(once, &again).ok() || !(again.ToEnvelope() == e)) __builtin_trap();
  if (!(Merge(e, e) == e)) __builtin_trap();
  return 0;
}
