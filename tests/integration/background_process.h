// BackgroundProcess: a child process (a shardkv-node) that a test starts, signals and reaps.
// Output goes to a log file; the destructor SIGKILLs and reaps a child still running, so a
// failing test never leaks processes.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace shardkv::testing {

class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& log_path) {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~BackgroundProcess() {
    if (running()) {
      kill(pid_, SIGKILL);
      Wait(std::chrono::seconds(10));
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !exited_; }
  void Signal(int sig) {
    if (running()) kill(pid_, sig);
  }
  // Reaps the child if it exits within `timeout`; returns its exit status (-1 if still running
  // or killed by a signal).
  int Wait(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (running()) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        break;
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exit_code_;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
};

#ifdef SHARDKV_NODE_PATH
// This build's shardkv-node as `--id 1 --data DATA --listen 127.0.0.1:0 EXTRA...`, logging to
// `log`. DATA/port is removed first, so that a wait for the port file sees the new node's.
inline std::unique_ptr<BackgroundProcess> StartNodeProcess(const std::string& data,
                                                           const std::string& log,
                                                           std::vector<std::string> extra = {}) {
  std::error_code ec;
  std::filesystem::remove(data + "/port", ec);
  std::vector<std::string> argv = {SHARDKV_NODE_PATH, "--id",       "1", "--data", data,
                                   "--listen",        "127.0.0.1:0"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return std::make_unique<BackgroundProcess>(argv, log);
}
#endif

}  // namespace shardkv::testing
