// Storage health with real processes: a node whose database is bind-mounted read-only under it
// says so (`cluster status`, /readyz, stats, one log line), the cluster keeps taking every write,
// and the node recovers without a restart once the mount is writable again. And the files a node
// writes for launchers are written whole or the start fails: a full disk left an empty port file
// behind a node that said "listening".
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "integration/background_process.h"
#include "metrics/http_get.h"
#include "storage/bind_mount.h"
#include "storage/small_disk.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"
#include "testing/log_capture.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

using shardkv::testing::BindMount;
using shardkv::testing::Field;
using shardkv::testing::HttpGet;
using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::SmallDisk;
using shardkv::testing::TempDir;

using shardkv::testing::CountOccurrences;
using shardkv::testing::ReadAll;

namespace {

// Node 3's object in `cluster status --json` ("" when absent).
std::string Node3(const LocalCluster& c) {
  ProcessResult status = c.Run({"cluster", "status", "--json"});
  const size_t at = status.out.find("{\"id\":3,");
  if (at == std::string::npos) return "";
  return status.out.substr(at, status.out.find('}', at) - at + 1);
}

}  // namespace

TEST_CASE("shardkv-node: a database remounted read-only is reported, bypassed, and recovered",
          "[multiprocess]") {
  LocalCluster c;
  ProcessResult up = c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60"});
  INFO(up.Text());
  REQUIRE(up.exit_code == 0);
  const std::string node3 = c.dir() + "/node-3";
  std::string address3 = ReadAll(node3 + "/address");
  address3 = address3.substr(0, address3.find('\n'));
  const uint16_t metrics3 = static_cast<uint16_t>(std::stoi(ReadAll(node3 + "/metrics_port")));
  const std::string pid3 = ReadAll(node3 + "/pid");
  // Declared after the cluster, so it is unmounted first, also when a REQUIRE fails.
  BindMount mount(node3 + "/db");
  if (!mount.ok()) {
    WARN("SKIPPED: cannot bind-mount " << node3 << "/db (" << mount.error() << "); needs root");
    return;
  }
  REQUIRE(mount.SetReadOnly(true));
  // Files RocksDB opened before stay writable; the first new one (a memtable switch, when a
  // write buffer fills) fails. Load until it does, bounded; every write of the load succeeds
  // through the cluster meanwhile.
  std::string status3;
  auto failing = [&] {
    status3 = Node3(c);
    return status3.find("\"state\":\"disk-error\"") != std::string::npos;
  };
  for (int round = 0; round < 4 && !failing(); ++round) {
    ProcessResult load = c.Run({"--cluster", address3, "load", "--count", "600", "--value-size",
                                "131072", "--prefix", "fill" + std::to_string(round) + "-"});
    INFO(load.Text());
    CHECK(load.exit_code == 0);
    CHECK(load.out.find(" 0 errors") != std::string::npos);
    (void)shardkv::testing::PollUntil(failing, std::chrono::seconds(3));
  }
  INFO(status3);
  REQUIRE(status3.find("\"state\":\"disk-error\"") != std::string::npos);
  CHECK(Field(status3, "problem").find("Read-only file system") != std::string::npos);
  // Not ready, with the reason; stats answer on the sick node.
  auto ready = HttpGet(metrics3, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("Read-only file system") != std::string::npos);
  ProcessResult stats = c.Run({"--cluster", address3, "stats"});
  INFO(stats.Text());
  CHECK(stats.exit_code == 0);
  CHECK(stats.out.find("NO ANSWER") == std::string::npos);
  CHECK(stats.err.find("did not answer") == std::string::npos);
  // Writes sent to it go elsewhere: every one succeeds.
  for (int i = 0; i < 30; ++i) {
    ProcessResult put = c.Run({"--cluster", address3, "put", "during" + std::to_string(i), "v"});
    INFO(put.Text());
    CHECK(put.exit_code == 0);
  }
  CHECK(CountOccurrences(ReadAll(node3 + "/node.log"), "storage I/O error in") == 1);

  // Writable again: the node recovers by itself, the same process.
  REQUIRE(mount.SetReadOnly(false));
  REQUIRE(shardkv::testing::PollUntil([&] { return Field(Node3(c), "state") == "up"; },
                                      std::chrono::seconds(30)));
  CHECK(HttpGet(metrics3, "/readyz").status == 200);
  ProcessResult after = c.Run({"--cluster", address3, "put", "after", "v"});
  INFO(after.Text());
  CHECK(after.exit_code == 0);
  CHECK(ReadAll(node3 + "/pid") == pid3);
  const std::string log = ReadAll(node3 + "/node.log");
  INFO(log);
  CHECK(CountOccurrences(log, "writes succeed again in") == 1);
  ProcessResult down = c.Run({"cluster", "down"});
  CHECK(down.exit_code == 0);
}

TEST_CASE("shardkv-node: a port file that cannot be written fails the start with the reason",
          "[multiprocess]") {
  // The data directory on a tiny tmpfs, filled; its database on the big disk (a symlink), so the
  // database opens and only the small files beside it cannot be written.
  SmallDisk disk(16);
  if (!disk.ok()) {
    WARN("SKIPPED: cannot mount a tmpfs (" << disk.error() << "); needs root");
    return;
  }
  TempDir dir;
  const std::string data = disk.path() + "/data";
  std::filesystem::create_directories(data);
  std::filesystem::create_directories(dir.Sub("db"));
  std::filesystem::create_directory_symlink(dir.Sub("db"), data + "/db");
  disk.Fill();
  auto node = shardkv::testing::StartNodeProcess(data, dir.Sub("node.log"));
  CHECK(node->Wait(std::chrono::seconds(30)) == 1);
  const std::string log = ReadAll(dir.Sub("node.log"));
  INFO(log);
  CHECK(log.find("cannot start: I/O error: cannot write " + data +
                 "/port.tmp: No space left on "
                 "device") != std::string::npos);
  CHECK(log.find("listening") == std::string::npos);
  CHECK_FALSE(std::filesystem::exists(data + "/port"));
  CHECK_FALSE(std::filesystem::exists(data + "/port.tmp"));

  disk.Free();
  node = shardkv::testing::StartNodeProcess(data, dir.Sub("again.log"));
  const std::string address = shardkv::testing::WaitForPortFile(data, std::chrono::seconds(30));
  CHECK(address.rfind("127.0.0.1:", 0) == 0);
  CHECK(ReadAll(data + "/port") == address.substr(10) + "\n");
  node->Signal(SIGTERM);
  CHECK(node->Wait(std::chrono::seconds(20)) == 0);
}
