// libFuzzer target: arbitrary bytes through ClusterMap::Decode (the map every node persists and
// receives from peers). Besides "no crash, no sanitizer report, no exception": a map that decodes
// re-encodes, decodes again, and encodes to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "shardkv/cluster_map.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto map =
      shardkv::ClusterMap::Decode(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!map.ok()) return 0;
  const std::string once = map->Encode();
  auto again = shardkv::ClusterMap::Decode(once);
  if (!again.ok() || again->Encode() != once) __builtin_trap();
  return 0;
}
