#include "lab/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

extern char** environ;

namespace shardkv::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh temp file path; the file is created so that concurrent tests never share one.
std::string TempFile(const char* tag) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/shardkv_lab_" + tag + "_XXXXXX";
  int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

}  // namespace

ProcessResult RunProcessFrom(const std::vector<std::string>& argv, const std::string& stdin_path);

ProcessResult RunProcess(const std::vector<std::string>& argv) {
  return RunProcessFrom(argv, "/dev/null");
}

ProcessResult RunProcessWithInput(const std::vector<std::string>& argv, const std::string& input) {
  const std::string in_path = TempFile("in");
  {
    std::ofstream out(in_path, std::ios::binary | std::ios::trunc);
    out.write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  ProcessResult r = RunProcessFrom(argv, in_path);
  unlink(in_path.c_str());
  return r;
}

ProcessResult RunProcessFrom(const std::vector<std::string>& argv, const std::string& stdin_path) {
  ProcessResult result;
  // Output goes to files rather than pipes: no poll loop, and no deadlock on large JSON.
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
  if (rc == 0) {
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  }
  result.out = ReadAll(out_path);
  result.err = ReadAll(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return result;
}

}  // namespace shardkv::testing
