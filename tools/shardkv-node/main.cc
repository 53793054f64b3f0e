// shardkv-node: runs one shardkv Node until SIGTERM or SIGINT.
//
// The first signal shuts down gracefully (stop accepting, finish in-flight requests, flush,
// close, exit 0). Shutdown is bounded: if it has not finished kGracefulStopTimeout later (a node
// busy computing a large plan ignored SIGTERM for 30 s, findings row 5), or a second signal
// arrives, the process exits at once with status 1. That is safe: the WAL already holds every
// acknowledged write, exactly as after kill -9.
//
// Exit status: 0 after a graceful stop, 1 if the node could not start or the stop was forced,
// 2 for a usage error (one "error:" line on stderr, before anything is started or opened): a bad
// flag, or a bad key or value of the --config file (node_config.h), 3 if a member's data
// directory holds no database of its cluster (it needs --rebuild).
#include <malloc.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "huge_page_malloc.h"
#include "node_flags.h"
#include "shardkv/node.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
// A member whose data directory holds no database of its cluster (Status::Reason::kNeedsRebuild):
// `shardkv cluster up/start-node` reads this status to advise --rebuild.
constexpr int kExitNeedsRebuild = 3;
constexpr std::chrono::seconds kGracefulStopTimeout{shardkv::node_tool::kGracefulStopSeconds};
// Test-only: the main thread waits this many ms before it starts the graceful stop, standing in
// for a node whose Stop() cannot finish (a busy computation). Never set it in production.
constexpr char kTestStopDelayEnv[] = "SHARDKV_TEST_STOP_DELAY_MS";

int UsageError(std::string_view message) {
  std::string line = "error: ";
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += "\n";
  std::fputs(line.c_str(), stderr);
  return kExitUsage;
}

[[noreturn]] void ExitNow(int code) {
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  _exit(code);
}

// What the signal thread tells the main thread, and back.
struct ShutdownState {
  std::mutex mu;
  std::condition_variable cv;
  bool requested = false;  // GUARDED_BY(mu)
  bool finished = false;   // GUARDED_BY(mu)
};

// Runs on its own thread for the process lifetime: takes the first signal, asks main to stop,
// and bounds how long that may take.
void SignalLoop(sigset_t signals, ShutdownState* state) {
  int sig = 0;
  while (sigwait(&signals, &sig) != 0) {
  }
  spdlog::info(
      "signal {}: shutting down gracefully (send it again to force; forced anyway "
      "after {} s)",
      sig, kGracefulStopTimeout.count());
  {
    std::lock_guard lock(state->mu);
    state->requested = true;
  }
  state->cv.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + kGracefulStopTimeout;
  for (;;) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) break;
    const auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
    timespec ts{};
    ts.tv_sec = secs.count();
    ts.tv_nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(left - secs).count();
    const int got = sigtimedwait(&signals, nullptr, &ts);
    if (got > 0) {
      spdlog::warn("signal {} again: exiting without finishing shutdown", got);
      ExitNow(kExitFailed);
    }
    if (errno != EINTR && errno != EAGAIN) break;
  }
  {
    std::lock_guard lock(state->mu);
    if (state->finished) return;  // main is returning; let it
  }
  spdlog::warn(
      "graceful shutdown did not finish in {} s; exiting (the WAL holds every "
      "acknowledged write)",
      kGracefulStopTimeout.count());
  ExitNow(kExitFailed);
}

// Large values leave freed memory in glibc's heap arenas: after its first free of a big block
// glibc serves blocks of that size from the arenas, not from fresh mappings, and keeps what they
// free. That reuse is what makes the next large value fast (touching fresh pages costs about
// 70 ms per 16 MiB on this kind of VM), but without a bound node RSS went from 30 MB to 1 GB
// after fifteen 16 MiB puts and stayed there. So the node keeps the reuse during a burst and,
// every kTrimInterval, gives the free memory back once more than kTrimAboveBytes of it is idle.
constexpr std::chrono::seconds kTrimInterval{2};
constexpr size_t kTrimAboveBytes = size_t{32} << 20;

void ReturnIdleMemory() {
  const struct mallinfo2 info = mallinfo2();
  if (info.fordblks > kTrimAboveBytes) malloc_trim(0);
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else (huge_page_malloc.h): large values cost a fraction of the time.
  shardkv::process::ReexecWithHugePageMalloc(argv);
  shardkv::node_tool::NodeCommandLine command_line;
  std::string error;
  const int parsed = shardkv::node_tool::ParseNodeCommandLine(argc, argv, &command_line, &error);
  if (parsed != shardkv::node_tool::kRunNode) {
    return parsed == kExitUsage ? UsageError(error) : parsed;
  }
  const shardkv::NodeOptions& options = command_line.options;
  const std::string& log_level = command_line.log_level;
  if (shardkv::Status valid = shardkv::ValidateNodeOptions(options); !valid.ok()) {
    const std::string where =
        command_line.config_path.empty() ? "" : " (flags over " + command_line.config_path + ")";
    return UsageError(valid.message() + where + " (see shardkv-node --help)");
  }

  auto logger = spdlog::stderr_color_mt("node");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [node " + std::to_string(options.id) + "] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Block the shutdown signals in every thread (the node's threads inherit the mask) and take
  // them synchronously on one thread, so no async-signal-safety rules constrain shutdown. That
  // thread exists before the node starts, so a signal during a long start (a rebuild) is bounded
  // by the same timeout.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  static ShutdownState state;  // static: the detached signal thread may outlive main's frame
  std::thread(SignalLoop, signals, &state).detach();

  auto node = shardkv::Node::Start(options);
  if (!node.ok()) {
    spdlog::error("cannot start: {}", node.status().ToString());
    return node.status().Is(shardkv::Status::Reason::kNeedsRebuild) ? kExitNeedsRebuild
                                                                    : kExitFailed;
  }
  {
    std::unique_lock lock(state.mu);
    while (!state.cv.wait_for(lock, kTrimInterval, [] { return state.requested; })) {
      lock.unlock();
      ReturnIdleMemory();
      lock.lock();
    }
  }
  if (const char* delay = std::getenv(kTestStopDelayEnv); delay != nullptr && *delay != '\0') {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoll(delay)));
  }
  (*node)->Stop();
  {
    std::lock_guard lock(state.mu);
    state.finished = true;
  }
  node->reset();
  spdlog::default_logger()->flush();
  return kExitOk;
}
