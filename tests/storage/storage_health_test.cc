// Storage health (storage_health.h): an I/O error of any kind (not only a full disk) is one
// logged episode that the storage reports, a clock that cannot persist its ceiling is
// Unavailable, and the storage recovers by itself, without a restart, once the error clears:
// injected through RocksDB's file system in process, and with a real read-only bind mount.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "storage/bind_mount.h"
#include "storage/storage.h"
#include "storage/storage_test_util.h"
#include "testing/log_capture.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using Clock = std::chrono::steady_clock;

using shardkv::testing::CapturedLog;
using shardkv::testing::CountOccurrences;

namespace {

// Polls `done` every 10 ms for up to `limit`.
bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace

TEST_CASE("storage: an injected I/O error is one logged episode, and recovers without a restart",
          "[storage][health]") {
  shardkv::testing::TempDir dir;
  CapturedLog log;
  auto fail = std::make_shared<std::atomic<bool>>(false);
  shardkv::testing::FakeClock wall(1'000'000);
  storage::StorageOptions options = shardkv::testing::TestOptions();
  options.node_id = 3;
  options.physical_clock_ms = wall.Fn();
  options.hlc_ceiling_window_ms = 100;
  options.health_check_interval_ms = 50;
  options.fault_injection_for_test = [fail](const std::string& file) {
    return fail->load() ? Status::IOError("injected: Read-only file system (" + file + ")")
                        : Status::OK();
  };
  const std::string path = dir.Sub("db");
  auto opened = storage::Storage::Open(path, options);
  REQUIRE_OK(opened);
  storage::Storage& s = **opened;
  REQUIRE_OK(s.Put(1, "before", "v"));
  CHECK_FALSE(s.Health().failing);
  CHECK(s.Health().failures == 0);

  fail->store(true);
  auto put = s.Put(1, "during", "v");
  REQUIRE_FALSE(put.ok());
  INFO(put.status().ToString());
  storage::StorageHealth h = s.Health();
  CHECK(h.failing);
  CHECK_FALSE(h.no_space);
  CHECK_FALSE(s.disk_full());
  CHECK(h.failures == 1);
  CHECK(h.io_errors >= 1);
  CHECK(h.error.find("injected: Read-only file system") != std::string::npos);
  CHECK(h.failing_since_ms == wall.Now());
  // A clock that needs a new ceiling cannot persist it: Unavailable (a client tries another
  // node), whatever the storage said.
  wall.Advance(1000);
  auto ts = s.clock().Now();
  REQUIRE_FALSE(ts.ok());
  CHECK(ts.status().code() == Status::Code::kUnavailable);
  CHECK(ts.status().message().find("persisting HLC ceiling") == 0);
  // Reads still work.
  CHECK(*s.Get(1, "before") == "v");
  // Every write fails while it lasts, and the episode is logged once, not per write; the probe
  // keeps failing meanwhile (several intervals).
  for (int i = 0; i < 20; ++i) CHECK_FALSE(s.Put(2, "k" + std::to_string(i), "v").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(s.Health().failing);
  CHECK(s.Health().failures == 1);
  CHECK(CountOccurrences(log.text(), "storage I/O error in " + path) == 1);

  // The error clears: the storage recovers by itself (no write from here is needed), and the
  // recovery is logged once.
  fail->store(false);
  INFO(log.text());
  REQUIRE(Eventually([&] { return !s.Health().failing; }, std::chrono::seconds(20)));
  CHECK(s.Health().error.empty());
  CHECK(s.Health().failures == 1);
  CHECK(CountOccurrences(log.text(), "writes succeed again in " + path) == 1);
  REQUIRE_OK(s.Put(1, "after", "v"));
  wall.Advance(1000);
  REQUIRE_OK(s.clock().Now());
  CHECK(*s.Get(1, "before") == "v");

  // What was acknowledged survives a restart; what failed was never applied.
  REQUIRE_OK(s.Close());
  opened->reset();
  auto reopened = storage::Storage::Open(path, options);
  REQUIRE_OK(reopened);
  CHECK(*(*reopened)->Get(1, "before") == "v");
  CHECK(*(*reopened)->Get(1, "after") == "v");
  CHECK((*reopened)->Get(1, "during").status().IsNotFound());
}

TEST_CASE("storage: a database remounted read-only fails, and recovers once writable again",
          "[storage][health][mount]") {
  shardkv::testing::TempDir dir;
  const std::string path = dir.Sub("db");
  storage::StorageOptions options = shardkv::testing::TestOptions();
  options.health_check_interval_ms = 50;
  auto opened = storage::Storage::Open(path, options);
  REQUIRE_OK(opened);
  storage::Storage& s = **opened;
  REQUIRE_OK(s.Put(1, "before", "v"));
  // After the open, as an operator would: RocksDB's files open now stay writable, new ones not.
  shardkv::testing::BindMount mount(path);
  if (!mount.ok()) {
    WARN("SKIPPED: cannot bind-mount " << path << " (" << mount.error() << "); needs root");
    return;
  }
  REQUIRE(mount.SetReadOnly(true));
  // A flush needs a new file: the first failure, whatever writes do before it.
  CHECK_FALSE(s.Flush().ok());
  REQUIRE(Eventually([&] { return s.Health().failing; }, std::chrono::seconds(10)));
  CHECK(s.Health().error.find("Read-only file system") != std::string::npos);
  CHECK_FALSE(s.Put(1, "during", "v").ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(s.Health().failing);  // the probe cannot create its file

  REQUIRE(mount.SetReadOnly(false));
  REQUIRE(Eventually([&] { return !s.Health().failing; }, std::chrono::seconds(20)));
  REQUIRE_OK(s.Put(1, "after", "v"));
  REQUIRE_OK(s.Flush());
  CHECK(*s.Get(1, "before") == "v");
  REQUIRE_OK(s.Close());
}

TEST_CASE("storage: a read-only database directory is refused as read-only, not as locked",
          "[storage][health][mount]") {
  shardkv::testing::TempDir dir;
  const std::string path = dir.Sub("db");
  {
    auto created = storage::Storage::Open(path, shardkv::testing::TestOptions());
    REQUIRE_OK(created);
    REQUIRE_OK((*created)->Close());
  }
  shardkv::testing::BindMount mount(path);
  if (!mount.ok()) {
    WARN("SKIPPED: cannot bind-mount " << path << " (" << mount.error() << "); needs root");
    return;
  }
  REQUIRE(mount.SetReadOnly(true));
  auto opened = storage::Storage::Open(path, shardkv::testing::TestOptions());
  REQUIRE_FALSE(opened.ok());
  INFO(opened.status().ToString());
  CHECK(opened.status().code() == Status::Code::kFailedPrecondition);
  CHECK(opened.status().message() ==
        "database directory " + path +
            " is on a read-only file system: remount it read-write, then start the node again");
  REQUIRE(mount.SetReadOnly(false));
  REQUIRE_OK(storage::Storage::Open(path, shardkv::testing::TestOptions()));
}
