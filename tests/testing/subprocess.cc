#include "testing/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;

namespace shardkv::testing {
std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

using Clock = std::chrono::steady_clock;

// A fresh temp file path; the file is created so that concurrent tests never share one.
std::string TempFile(const char* tag) {
  const char* dir = std::getenv("TMPDIR");
  std::string path =
      std::string(dir != nullptr && *dir ? dir : "/tmp") + "/shardkv_proc_" + tag + "_XXXXXX";
  int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

// Waits for `pid` (without a limit when `limit` is nullopt); SIGKILLs it past the limit.
void Reap(pid_t pid, std::optional<std::chrono::milliseconds> limit, ProcessResult* result) {
  int status = 0;
  if (!limit) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) result->exit_code = WEXITSTATUS(status);
    return;
  }
  const auto deadline = Clock::now() + *limit;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (WIFEXITED(status)) result->exit_code = WEXITSTATUS(status);
      return;
    }
    if (r < 0 && errno != EINTR) return;
    if (Clock::now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      result->timed_out = true;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

ProcessResult RunProcessFrom(const std::vector<std::string>& argv, const std::string& stdin_path,
                             std::optional<std::chrono::milliseconds> limit) {
  ProcessResult result;
  std::string out_path = TempFile("out");
  std::string err_path = TempFile("err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, stdin_path.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_TRUNC,
                                   0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_TRUNC,
                                   0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) Reap(pid, limit, &result);
  result.out = ReadAll(out_path);
  result.err = ReadAll(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return result;
}

}  // namespace

std::string ProcessResult::Text() const {
  return "exit " + std::to_string(exit_code) + (timed_out ? " (timed out, killed)" : "") +
         "\n--- stdout\n" + out + "--- stderr\n" + err;
}

ProcessResult RunProcess(const std::vector<std::string>& argv) {
  return RunProcessFrom(argv, "/dev/null", std::nullopt);
}

ProcessResult RunProcess(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  return RunProcessFrom(argv, "/dev/null", limit);
}

ProcessResult RunProcessWithInput(const std::vector<std::string>& argv, const std::string& input) {
  const std::string in_path = TempFile("in");
  {
    std::ofstream out(in_path, std::ios::binary | std::ios::trunc);
    out.write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  ProcessResult r = RunProcessFrom(argv, in_path, std::nullopt);
  unlink(in_path.c_str());
  return r;
}

}  // namespace shardkv::testing
