// libFuzzer target: arbitrary bytes through StreamCheckpoint::Decode (the Cap'n Proto form and
// the v0.1.0 space-separated text). Besides "no crash, no sanitizer report, no exception": a
// checkpoint that decodes has its merge index in range (the sink indexes with it), re-encodes,
// and decodes again to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "rebalance/stream_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using shardkv::rebalance::StreamCheckpoint;
  auto c = StreamCheckpoint::Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!c.ok()) return 0;
  if (c->phase == 1 && c->merge_index >= c->merge_ids.size()) __builtin_trap();
  const std::string once = c->Encode();
  auto again = StreamCheckpoint::Decode(once);
  if (!again.ok() || again->Encode() != once) __builtin_trap();
  return 0;
}
