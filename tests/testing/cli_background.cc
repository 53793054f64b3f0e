#include "testing/cli_background.h"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "testing/cluster_util.h"

namespace shardkv::testing {
namespace {

int counter = 0;  // distinguishes the output files of several commands of one cluster

}  // namespace

BackgroundCli::BackgroundCli(const LocalCluster& c, std::vector<std::string> args) {
  const std::string base = c.dir() + "/cli-" + std::to_string(++counter);
  out_path_ = base + ".out";
  err_path_ = base + ".err";
  std::vector<std::string> argv{SHARDKV_CLI_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--dir", c.dir()});
  std::vector<char*> raw;
  for (std::string& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  pid_ = fork();
  REQUIRE(pid_ >= 0);
  if (pid_ == 0) {
    const int in = open("/dev/null", O_RDONLY);
    const int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(127);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(raw[0], raw.data());
    _exit(127);
  }
}

BackgroundCli::~BackgroundCli() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
}

void BackgroundCli::Signal(int sig) const {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

std::optional<int> BackgroundCli::Wait(std::chrono::milliseconds limit) {
  int status = 0;
  const bool done = PollUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, limit,
                              std::chrono::milliseconds(20));
  if (!done) return std::nullopt;
  reaped_ = true;
  return status;
}

std::string BackgroundCli::Out() const { return ReadAll(out_path_); }
std::string BackgroundCli::Err() const { return ReadAll(err_path_); }

SlowNodeLaunch::SlowNodeLaunch(const std::string& dir, const std::string& flag, int delay_s) {
  const std::string path = dir + "/slow-shardkv-node";
  {
    std::ofstream out(path);
    out << "#!/bin/sh\n"
        << "for a in \"$@\"; do [ \"$a\" = '" << flag << "' ] && sleep " << delay_s
        << " && break; done\n"
        << "exec '" << SHARDKV_NODE_PATH << "' \"$@\"\n";
  }
  REQUIRE(chmod(path.c_str(), 0755) == 0);
  setenv("SHARDKV_NODE_BIN", path.c_str(), 1);
}

SlowNodeLaunch::~SlowNodeLaunch() { setenv("SHARDKV_NODE_BIN", SHARDKV_NODE_PATH, 1); }

int KillAddNodeLeavingOrphan(const LocalCluster& c) {
  int id = 1;
  while (std::filesystem::exists(c.dir() + "/node-" + std::to_string(id))) ++id;
  const std::string node_dir = c.dir() + "/node-" + std::to_string(id);
  SlowNodeLaunch slow(c.dir(), "--id", 3);
  BackgroundCli add(c, {"cluster", "add-node", "--yes"});
  // The launcher writes the pid file right after it spawned the (still sleeping) node.
  const bool spawned = PollUntil([&] { return ReadPid(node_dir + "/pid").has_value(); },
                                 std::chrono::seconds(30), std::chrono::milliseconds(5));
  add.Signal(SIGKILL);
  const std::optional<int> status = add.Wait(std::chrono::seconds(10));
  UNSCOPED_INFO("add-node stderr:\n" << add.Err());
  if (!spawned || !status || !WIFSIGNALED(*status)) return 0;
  // The node carries on without its launcher, and listens once its delay is over.
  const bool listening = PollUntil([&] { return std::filesystem::exists(node_dir + "/port"); },
                                   std::chrono::seconds(30), std::chrono::milliseconds(20));
  return listening ? id : 0;
}

}  // namespace shardkv::testing
