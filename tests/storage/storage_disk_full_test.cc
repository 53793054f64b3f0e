// A full disk (findings rows 8 and 9): the start-up free-space check, and on a real (tiny tmpfs)
// full disk: a plain "no space left on device on node N" error, the disk_full gauge, one log
// line per episode, recovery once space is freed, and a refused (not aborted) restart.
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>
#include <thread>

#include "storage/disk_space.h"
#include "storage/small_disk.h"
#include "storage/storage.h"
#include "testing/log_capture.h"
#include "testing/temp_dir.h"

using namespace shardkv;

using shardkv::testing::CapturedLog;
using shardkv::testing::CountOccurrences;

namespace {

// RocksDB resumes writing after a full disk only once it has a write buffer's worth (64 MiB)
// free again, besides its ~70 MiB preallocated WAL, so the disk must be well above both.
constexpr size_t kDiskMiB = 200;

}  // namespace

TEST_CASE("disk space: a start needs kMinFreeBytesToStart free", "[storage][disk]") {
  Status low = storage::CheckFreeSpaceForStart("/data/n1", storage::kMinFreeBytesToStart - 1);
  CHECK(low.code() == Status::Code::kResourceExhausted);
  CHECK(low.message().find("no space left on device in /data/n1") == 0);
  CHECK(storage::CheckFreeSpaceForStart("/data/n1", 0).code() == Status::Code::kResourceExhausted);
  CHECK(storage::CheckFreeSpaceForStart("/data/n1", storage::kMinFreeBytesToStart).ok());
  shardkv::testing::TempDir dir;
  auto free_bytes = storage::FreeBytes(dir.path());
  REQUIRE(free_bytes.ok());
  CHECK(*free_bytes > 0);
  CHECK_FALSE(storage::FreeBytes(dir.Sub("missing")).ok());
}

TEST_CASE("storage: a full disk is one logged episode, a gauge, and a plain error",
          "[storage][disk]") {
  shardkv::testing::SmallDisk disk(kDiskMiB);
  if (!disk.ok()) {
    WARN("SKIPPED: cannot mount a tmpfs (" << disk.error() << "); needs root");
    return;
  }
  CapturedLog log;
  storage::StorageOptions options;
  options.node_id = 7;
  const std::string path = disk.path() + "/db";
  auto storage = storage::Storage::Open(path, options);
  REQUIRE(storage.ok());
  REQUIRE((*storage)->Put(1, "before", "v").ok());
  CHECK_FALSE((*storage)->disk_full());

  disk.Fill();
  // Writes still succeed until the space RocksDB preallocated for its WAL is used up (or the
  // memtable's flush fails); bounded at 4x the disk.
  const std::string value(size_t{64} << 10, 'v');
  Status failed;
  for (size_t i = 0; i < kDiskMiB * 4 * 16 && failed.ok(); ++i) {
    failed = (*storage)->Put(2, "k" + std::to_string(i), value).status();
  }
  INFO(failed.ToString());
  REQUIRE_FALSE(failed.ok());
  // Whatever the write was doing when it failed (often persisting the HLC ceiling), the error
  // ends in the plain words.
  CHECK(failed.message().find("no space left on device on node 7") != std::string::npos);
  CHECK(failed.message().find("IO error") == std::string::npos);
  CHECK((*storage)->disk_full());
  CHECK((*storage)->io_errors() >= 1);
  for (int i = 0; i < 20; ++i) (void)(*storage)->Put(3, "again" + std::to_string(i), value);
  CHECK((*storage)->disk_full());
  CHECK(CountOccurrences(log.text(), "no space left on device in " + path) ==
        1);  // once, not per write

  disk.Free();
  // RocksDB recovers from a full disk by itself once space is back (its SstFileManager polls
  // the free space every few seconds); poll, bounded, until a write succeeds.
  bool recovered = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!recovered && std::chrono::steady_clock::now() < deadline) {
    recovered = (*storage)->Put(4, "after", "v").ok();
    if (!recovered) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  INFO(log.text());
  REQUIRE(recovered);
  CHECK_FALSE((*storage)->disk_full());
  CHECK(CountOccurrences(log.text(), "writes succeed again in " + path) == 1);
  CHECK(*(*storage)->Get(1, "before") == "v");
  REQUIRE((*storage)->Close().ok());
  storage->reset();

  // Restarting on a full disk is refused in plain words, not by a RocksDB assertion abort.
  disk.Fill();
  auto reopened = storage::Storage::Open(path, options);
  REQUIRE_FALSE(reopened.ok());
  CHECK(reopened.status().code() == Status::Code::kResourceExhausted);
  CHECK(reopened.status().message().find("no space left on device in " + path) == 0);
  disk.Free();
  reopened = storage::Storage::Open(path, options);
  REQUIRE(reopened.ok());
  CHECK(*(*reopened)->Get(4, "after") == "v");
}
