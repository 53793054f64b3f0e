// shardkv-bench's drivers: one interface over the two targets, shardkv (through the public
// async client API) and redis-server (through hiredis). Split from kv_bench.cc; the drivers
// themselves are in kv_bench_drivers.cc.
#pragma once

#include <memory>

#include "kv_bench_measure.h"
#include "kv_bench_workload.h"

namespace kv_bench {

class Driver {
 public:
  virtual ~Driver() = default;
  // Opens the connections. Not measured.
  virtual Status Connect() = 0;
  // Runs `run` to completion: every client keeps `pipeline` requests outstanding until its
  // quota, the end time or an abort stops it, then all outstanding requests are awaited.
  // Returns an error only if the phase could not be completed (stuck requests).
  virtual Status Execute(Run& run) = 0;
};

// The driver of --target shardkv, and of --target redis.
std::unique_ptr<Driver> MakeShardkvDriver(const Config& config);
std::unique_ptr<Driver> MakeRedisDriver(const Config& config);

}  // namespace kv_bench
