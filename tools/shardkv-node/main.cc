// shardkv-node: runs one shardkv Node until SIGTERM or SIGINT.
//
// The first signal shuts down gracefully (stop accepting, finish in-flight requests, flush,
// close, exit 0). Shutdown is bounded: if it has not finished kGracefulStopTimeout later (a node
// busy computing a large plan ignored SIGTERM for 30 s, findings row 5), or a second signal
// arrives, the process exits at once with status 1. That is safe: the WAL already holds every
// acknowledged write, exactly as after kill -9.
//
// Exit status: 0 after a graceful stop, 1 if the node could not start or the stop was forced,
// 2 for a usage error (one "error:" line on stderr, before anything is started or opened).
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>

#include "shardkv/node.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr std::chrono::seconds kGracefulStopTimeout{5};
// Test-only: the main thread waits this many ms before it starts the graceful stop, standing in
// for a node whose Stop() cannot finish (a busy computation). Never set it in production.
constexpr char kTestStopDelayEnv[] = "SHARDKV_TEST_STOP_DELAY_MS";

int UsageError(std::string_view message) {
  std::string line = "error: ";
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  line += " (see shardkv-node --help)\n";
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

}  // namespace

int main(int argc, char** argv) {
  shardkv::NodeOptions options;
  std::string log_level = "info";
  uint64_t grace_s = options.tombstone_grace_ms / 1000;
  CLI::App app{"shardkv-node: one node of a shardkv cluster"};
  app.add_option("--id", options.id, "Node id, unique in the cluster and never reused")
      ->required()
      ->check(CLI::Range(1u, shardkv::kMaxNodeId));
  app.add_option("--cluster-id", options.cluster_id,
                 "The cluster this node belongs to (from cluster.conf). With it the node refuses "
                 "to start on a data directory without a database or with another cluster's "
                 "data (rebuild it with --rebuild), and --rebuild accepts only this cluster's "
                 "maps. Leave it out for a new node that has not joined a cluster yet")
      // CLI11 would read "-1" as 2^64-1, which passes any range: insist on digits first.
      ->check(CLI::Validator(
          [](const std::string& text) {
            return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos
                       ? std::string()
                       : "'" + text + "' is not a cluster id (a positive decimal number)";
          },
          "DIGITS"))
      ->check(CLI::Range(uint64_t{1}, std::numeric_limits<uint64_t>::max()));
  app.add_option("--listen", options.listen,
                 "host:port to listen on (port 0-65535; 0 = any free port, written to "
                 "DATA/port); an IPv6 host goes in brackets")
      ->capture_default_str();
  app.add_option("--data", options.data_dir, "Data directory (created if missing)")->required();
  app.add_option("--seeds", options.seeds, "Other nodes (host:port), comma separated")
      ->delimiter(',');
  app.add_option("--threads", options.io_threads, "Network I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, shardkv::kMaxIoThreads));
  app.add_flag("--sync", options.sync, "fsync the WAL before acknowledging each write");
  app.add_flag("--rebuild", options.rebuild,
               "Drop local data, fetch the map from --seeds and re-stream this node's ranges from "
               "the other replicas before serving (a node that lost its data, or was down longer "
               "than the tombstone grace). Needs --seeds");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, critical, off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_option("--tombstone-grace", grace_s, "Seconds before deleted keys are purged")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, shardkv::kMaxTombstoneGraceSeconds));
  app.add_option("--max-key-bytes", options.max_key_bytes,
                 "Largest key this node accepts, in bytes; a longer one is refused with "
                 "'invalid argument'")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, shardkv::kMaxKeyBytesLimit));
  app.add_option("--max-value-bytes", options.max_value_bytes,
                 "Largest value this node accepts, in bytes; a larger one is refused with "
                 "'invalid argument'. Give every node of a cluster the same limits")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, shardkv::kMaxValueBytesLimit));
  app.footer(
      "Exit status: 0 after a graceful stop, 1 if the node cannot start or its stop was "
      "forced (a second signal, or still stopping " +
      std::to_string(kGracefulStopTimeout.count()) +
      " s after the first), 2 for a "
      "usage error.\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is an "error" to CLI11 with exit code 0; it prints it itself.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::string message = e.what();
    return UsageError(message.empty() ? e.get_name() : message);
  }
  options.tombstone_grace_ms = grace_s * 1000;
  if (shardkv::Status valid = shardkv::ValidateNodeOptions(options); !valid.ok()) {
    return UsageError(valid.message());
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
    return kExitFailed;
  }
  {
    std::unique_lock lock(state.mu);
    state.cv.wait(lock, [] { return state.requested; });
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
