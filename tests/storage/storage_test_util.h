// Helpers shared by the storage tests: temp directories, a fake clock, Status assertions.
#pragma once

#include <stdlib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <system_error>

#include "shardkv/status.h"
#include "storage/storage.h"

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

// A unique directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                       "/shardkv-storage-test-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // A not-yet-existing subdirectory, for tests that need several databases.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

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
inline StorageOptions TestOptions() {
  StorageOptions o;
  o.block_cache_bytes = size_t{1} << 20;
  o.node_id = 1;
  return o;
}

inline std::unique_ptr<Storage> OpenOrDie(const std::string& path, StorageOptions options) {
  auto s = Storage::Open(path, std::move(options));
  REQUIRE_OK(s);
  return std::move(s).value();
}

}  // namespace shardkv::testing
