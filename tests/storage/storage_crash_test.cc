// Storage: every acknowledged write survives kill -9 of the writing process.
//
// The parent forks a child that re-executes this test binary running only the hidden test case
// below. exec matters: the parent is a multi-threaded process (RocksDB background threads from
// earlier test cases), and after a bare fork() only async-signal-safe calls are safe in the
// child. The child opens the store, writes keys one by one and, after each acknowledged write,
// reports the count (and the write's timestamp) through a pipe. The parent SIGKILLs it once
// enough writes were acknowledged, drains the pipe, reopens the store and checks every
// acknowledged key.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "storage/storage.h"
#include "storage/storage_test_util.h"

extern char** environ;

namespace shardkv::storage {
namespace {

using testing::OpenOrDie;
using testing::TempDir;
using testing::TestOptions;

constexpr char kChildTestName[] = "storage crash child writes until killed";
constexpr char kDirEnv[] = "SHARDKV_CRASH_TEST_DIR";
constexpr char kFdEnv[] = "SHARDKV_CRASH_TEST_FD";
constexpr char kSyncEnv[] = "SHARDKV_CRASH_TEST_SYNC";

struct Ack {
  uint64_t count;      // writes acknowledged so far
  uint64_t timestamp;  // HLC timestamp of the latest one
};

uint64_t TokenOf(uint64_t i) { return i * 0x9E3779B97F4A7C15ULL; }
std::string KeyOf(uint64_t i) { return "key:" + std::to_string(i); }
std::string ValueOf(uint64_t i) { return "value:" + std::to_string(i * 7919); }

// Runs only when started by the parent below ([.] hides it from normal runs and ctest).
TEST_CASE(kChildTestName, "[.][crash-child]") {
  const char* dir = std::getenv(kDirEnv);
  const char* fd_text = std::getenv(kFdEnv);
  if (dir == nullptr || fd_text == nullptr) {
    SUCCEED("not started by the crash test");
    return;
  }
  const int fd = std::atoi(fd_text);
  StorageOptions options = TestOptions();
  options.sync = std::getenv(kSyncEnv) != nullptr;
  auto db = OpenOrDie(dir, options);
  // Write far more than the parent waits for; the parent kills us long before the end.
  for (uint64_t i = 0; i < 10'000'000; ++i) {
    auto r = db->Put(TokenOf(i), KeyOf(i), ValueOf(i));
    REQUIRE_OK(r);
    const Ack ack{i + 1, r->written.timestamp};
    // 16 bytes < PIPE_BUF: each report is written atomically.
    REQUIRE(::write(fd, &ack, sizeof(ack)) == static_cast<ssize_t>(sizeof(ack)));
  }
  FAIL("the parent never killed the child");
}

// Starts the child and returns its pid; *read_fd receives the acknowledgement pipe.
pid_t StartChild(const std::string& dir, bool sync, int* read_fd) {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  // Build everything the child needs before fork(): afterwards only async-signal-safe calls.
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  REQUIRE(n > 0);
  exe[n] = '\0';
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.push_back(std::string(kDirEnv) + "=" + dir);
  env_strings.push_back(std::string(kFdEnv) + "=" + std::to_string(fds[1]));
  if (sync) env_strings.push_back(std::string(kSyncEnv) + "=1");
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string test_name = kChildTestName;
  char* argv[] = {exe, test_name.data(), nullptr};
  const int dev_null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  REQUIRE(dev_null >= 0);

  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: keep the write end across exec, silence Catch's report on stdout.
    if (::fcntl(fds[1], F_SETFD, 0) != 0 || ::dup2(dev_null, STDOUT_FILENO) < 0) _exit(120);
    ::execve(exe, argv, envp.data());
    _exit(121);
  }
  ::close(fds[1]);  // so the parent sees EOF once the child is gone
  ::close(dev_null);
  *read_fd = fds[0];
  return pid;
}

TEST_CASE("acknowledged writes survive kill -9 of the writer", "[storage][durability][crash]") {
  const bool sync = GENERATE(false, true);
  // With sync each write waits for an fsync, so wait for fewer of them.
  const uint64_t kill_after = sync ? 200 : 3000;
  INFO("sync=" << sync);
  TempDir dir;
  int fd = -1;
  const pid_t pid = StartChild(dir.path(), sync, &fd);

  uint64_t acked = 0;
  uint64_t last_ts = 0;
  bool killed = false;
  std::string buffer;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      FAIL("timed out waiting for the child; acknowledged " << acked);
    }
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    REQUIRE(ready >= 0);
    if (ready == 0) continue;
    char chunk[4096];
    const ssize_t got = ::read(fd, chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    REQUIRE(got >= 0);
    if (got == 0) break;  // EOF: the child is gone and the pipe is drained
    buffer.append(chunk, static_cast<size_t>(got));
    while (buffer.size() >= sizeof(Ack)) {
      Ack ack;
      std::memcpy(&ack, buffer.data(), sizeof(ack));
      buffer.erase(0, sizeof(ack));
      REQUIRE(ack.count == acked + 1);
      acked = ack.count;
      last_ts = ack.timestamp;
    }
    if (!killed && acked >= kill_after) {
      REQUIRE(::kill(pid, SIGKILL) == 0);  // mid-way: the child is still writing
      killed = true;
    }
  }
  ::close(fd);
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  INFO("child status " << status << ", acknowledged " << acked);
  REQUIRE(killed);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  REQUIRE(acked >= kill_after);

  auto db = OpenOrDie(dir.path(), TestOptions());
  uint64_t missing = 0;
  for (uint64_t i = 0; i < acked; ++i) {
    auto got = db->Get(TokenOf(i), KeyOf(i));
    if (!got.ok() || *got != ValueOf(i)) ++missing;
  }
  CHECK(missing == 0);
  // The restarted clock is past every acknowledged timestamp (ceiling persisted in meta).
  auto now = db->clock().Now();
  REQUIRE_OK(now);
  CHECK(*now > last_ts);
}

}  // namespace
}  // namespace shardkv::storage
