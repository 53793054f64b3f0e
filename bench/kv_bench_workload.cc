// The out-of-line parts of shardkv-bench's workload (kv_bench_workload.h).
#include "kv_bench_workload.h"

#include <cstring>

namespace kv_bench {

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kWarmup:
      return "warmup";
    case Phase::kPreload:
      return "preload";
    case Phase::kMain:
      return "run";
  }
  return "?";
}

void FormatKey(uint64_t id, char* out) {
  std::memcpy(out, "key:", 4);
  for (int i = 15; i >= 4; --i) {
    out[i] = static_cast<char>('0' + id % 10);
    id /= 10;
  }
}

}  // namespace kv_bench
