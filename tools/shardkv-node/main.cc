// shardkv-node: runs one shardkv Node until SIGTERM or SIGINT.
//
// The first signal shuts down gracefully (stop accepting, finish in-flight requests, flush,
// close, exit 0); a second one forces the exit at once.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cstdio>
#include <thread>

#include "shardkv/node.h"

int main(int argc, char** argv) {
  shardkv::NodeOptions options;
  std::string log_level = "info";
  uint64_t grace_s = options.tombstone_grace_ms / 1000;
  CLI::App app{"shardkv-node: one node of a shardkv cluster"};
  app.add_option("--id", options.id, "Node id, unique in the cluster and never reused")
      ->required()
      ->check(CLI::Range(1u, 1u << 30));
  app.add_option("--listen", options.listen, "host:port to listen on (port 0 = any free port)")
      ->capture_default_str();
  app.add_option("--data", options.data_dir, "Data directory")->required();
  app.add_option("--seeds", options.seeds, "Other nodes (host:port), comma separated")
      ->delimiter(',');
  app.add_option("--threads", options.io_threads, "Network I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--sync", options.sync, "fsync the WAL before acknowledging each write");
  app.add_flag("--rebuild", options.rebuild,
               "Drop local data, fetch the map from --seeds and re-stream this node's ranges from "
               "the other replicas before serving (a node down longer than the tombstone grace)");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error, off")
      ->capture_default_str()
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  app.add_option("--tombstone-grace", grace_s, "Seconds before deleted keys are purged")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  app.add_option("--max-key-bytes", options.max_key_bytes)->capture_default_str();
  app.add_option("--max-value-bytes", options.max_value_bytes)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.tombstone_grace_ms = grace_s * 1000;

  auto logger = spdlog::stderr_color_mt("node");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [node " + std::to_string(options.id) + "] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(log_level));

  // Block the shutdown signals in every thread (the node's threads inherit the mask) and take
  // them synchronously on this thread, so no async-signal-safety rules constrain shutdown.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto node = shardkv::Node::Start(options);
  if (!node.ok()) {
    spdlog::error("cannot start: {}", node.status().ToString());
    return 1;
  }
  std::atomic<bool> stopped{false};
  std::thread stopper;
  for (int received = 0;;) {
    int sig = 0;
    if (sigwait(&signals, &sig) != 0) continue;
    if (stopped.load()) break;  // the stopper's own wake-up: the graceful stop is complete
    if (++received == 1) {
      spdlog::info("signal {}: shutting down gracefully (send it again to force)", sig);
      // Stop on another thread so this one can still take a second signal.
      stopper = std::thread([&] {
        (*node)->Stop();
        stopped.store(true);
        kill(getpid(), SIGTERM);
      });
      continue;
    }
    spdlog::warn("signal {} again: exiting without finishing shutdown", sig);
    std::fflush(nullptr);
    _exit(1);
  }
  stopper.join();
  return 0;
}
