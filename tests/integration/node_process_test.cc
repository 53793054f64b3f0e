// A real shardkv-node process driven through the shardkv CLI: acknowledged writes survive
// kill -9, SIGTERM shuts down cleanly, and bad CLI input is refused with exit code 2.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "integration/background_process.h"
#include "testing/cluster_util.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

using shardkv::testing::BackgroundProcess;
using shardkv::testing::RunProcess;
using shardkv::testing::TempDir;
using shardkv::testing::TestKeys;

namespace {

// Waits for the node to write its port file; returns "127.0.0.1:port" or "".
std::string WaitForPort(const std::string& data_dir, std::chrono::seconds timeout) {
  return shardkv::testing::WaitForPortFile(data_dir, timeout);
}

std::unique_ptr<BackgroundProcess> StartNode(const TempDir& dir,
                                             const std::string& log_level = "warn") {
  return shardkv::testing::StartNodeProcess(dir.Sub("data"), dir.Sub("node.log"),
                                            {"--log-level", log_level});
}

}  // namespace

TEST_CASE("node process: acknowledged writes survive kill -9", "[multiprocess]") {
  TempDir dir;
  auto node = StartNode(dir);
  std::string address = WaitForPort(dir.Sub("data"), std::chrono::seconds(20));
  REQUIRE_FALSE(address.empty());
  REQUIRE(shardkv::testing::FormAlone(address).ok());  // a fresh node is unformed
  const std::string count = std::to_string(TestKeys(20000));
  auto load = RunProcess({SHARDKV_CLI_PATH, "--cluster", address, "load", "--count", count});
  INFO(load.err);
  REQUIRE(load.exit_code == 0);

  node->Signal(SIGKILL);
  node->Wait(std::chrono::seconds(10));
  node = StartNode(dir);
  address = WaitForPort(dir.Sub("data"), std::chrono::seconds(20));
  REQUIRE_FALSE(address.empty());
  auto verify = RunProcess({SHARDKV_CLI_PATH, "--cluster", address, "verify", "--count", count});
  INFO(verify.out << verify.err);
  CHECK(verify.exit_code == 0);
  CHECK(verify.out.find(count + " ok, 0 missing, 0 mismatched") != std::string::npos);
}

TEST_CASE("node process: SIGTERM shuts down gracefully", "[multiprocess]") {
  TempDir dir;
  auto node = StartNode(dir, "info");
  const std::string address = WaitForPort(dir.Sub("data"), std::chrono::seconds(20));
  REQUIRE_FALSE(address.empty());
  REQUIRE(shardkv::testing::FormAlone(address).ok());  // a fresh node is unformed
  REQUIRE(RunProcess({SHARDKV_CLI_PATH, "--cluster", address, "put", "k", "v"}).exit_code == 0);
  node->Signal(SIGTERM);
  CHECK(node->Wait(std::chrono::seconds(20)) == 0);
  std::ifstream log(dir.Sub("node.log"));
  std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  CHECK(text.find("shutting down gracefully") != std::string::npos);
  CHECK(text.find("node 1 stopped") != std::string::npos);
  // The data was flushed and closed cleanly: it reopens with the key in place.
  node = StartNode(dir);
  const std::string again = WaitForPort(dir.Sub("data"), std::chrono::seconds(20));
  REQUIRE_FALSE(again.empty());
  auto get = RunProcess({SHARDKV_CLI_PATH, "--cluster", again, "get", "k"});
  CHECK(get.out == "v");
}

TEST_CASE("cli: bad input exits 2 with one line, unreachable exits 3", "[multiprocess]") {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"get"},
                                               {"load"},
                                               {"load", "--count", "0"},
                                               {"put", "--consistency", "most", "k", "v"},
                                               {"nosuchcommand"}}) {
    std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--cluster", "127.0.0.1:1"};
    argv.insert(argv.end(), args.begin(), args.end());
    auto r = RunProcess(argv);
    INFO(args.front() << ": " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  auto r =
      RunProcess({SHARDKV_CLI_PATH, "--cluster", "127.0.0.1:1", "--timeout", "2000", "get", "k"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("127.0.0.1:1") != std::string::npos);
  auto help = RunProcess({SHARDKV_CLI_PATH, "load", "--help"});
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("--value-size") != std::string::npos);
}
