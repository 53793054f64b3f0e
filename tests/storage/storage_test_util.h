// Helpers shared by the storage tests: a fake clock, Status assertions, test options. The temp
// directory helper is testing/temp_dir.h (included here, so `testing::TempDir` still works).
#pragma once

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "shardkv/status.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

namespace shardkv::testing {

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const StatusOr<T>& s) {
  return s.status();
}

}  // namespace shardkv::testing

// REQUIRE that a Status or StatusOr is OK, printing the status when it is not.
#define REQUIRE_OK(expr)                                                           \
  do {                                                                             \
    const ::shardkv::Status _shardkv_test_st = ::shardkv::testing::StatusOf(expr); \
    INFO(_shardkv_test_st.ToString());                                             \
    REQUIRE(_shardkv_test_st.ok());                                                \
  } while (0)

namespace shardkv::testing {

// A manually advanced wall clock in ms, shareable with Storage/HLC options.
class FakeClock {
 public:
  explicit FakeClock(uint64_t start_ms) : ms_(std::make_shared<std::atomic<uint64_t>>(start_ms)) {}
  uint64_t Now() const { return ms_->load(); }
  void Set(uint64_t ms) { ms_->store(ms); }
  void Advance(uint64_t ms) { ms_->fetch_add(ms); }
  std::function<uint64_t()> Fn() const {
    auto ms = ms_;
    return [ms] { return ms->load(); };
  }

 private:
  std::shared_ptr<std::atomic<uint64_t>> ms_;
};

// Small caches for tests; everything else default.
// A fixed "now" for the storage tests' fake clocks.
inline constexpr uint64_t kStartMs = 1'700'000'000'000;

inline storage::StorageOptions TestOptions() {
  storage::StorageOptions o;
  o.block_cache_bytes = size_t{1} << 20;
  o.node_id = 1;
  return o;
}

inline std::unique_ptr<storage::Storage> OpenOrDie(const std::string& path,
                                                   storage::StorageOptions options) {
  auto s = storage::Storage::Open(path, std::move(options));
  REQUIRE_OK(s);
  return std::move(s).value();
}

}  // namespace shardkv::testing
