// Helpers for CLI tests that interrupt a command part-way: a `shardkv` command run in the
// background (to signal it), and a shardkv-node wrapper that starts the node late (to signal the
// command at a known point, or to act while a node starts).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "testing/cli_harness.h"

namespace shardkv::testing {

// `shardkv ARGS... --dir DIR` in the background; stdout and stderr go to files in the cluster
// directory. The destructor SIGKILLs and reaps it if it still runs.
class BackgroundCli {
 public:
  BackgroundCli(const LocalCluster& c, std::vector<std::string> args);
  ~BackgroundCli();
  BackgroundCli(const BackgroundCli&) = delete;
  BackgroundCli& operator=(const BackgroundCli&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int sig) const;
  // Reaps it if it exits within `limit`: its wait status (WIFEXITED, WIFSIGNALED); nullopt if it
  // still runs.
  std::optional<int> Wait(std::chrono::milliseconds limit);
  std::string Out() const;
  std::string Err() const;

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  std::string out_path_, err_path_;
};

// Points SHARDKV_NODE_BIN (which the CLI launches nodes with) at a wrapper of this build's
// shardkv-node that sleeps `delay_s` seconds before it execs the node whenever the node's
// arguments include `flag` (e.g. "--rebuild"; "--id" for every launch, not for `--help`). The
// wrapper lives in `dir`. The destructor points SHARDKV_NODE_BIN back at the real node.
class SlowNodeLaunch {
 public:
  SlowNodeLaunch(const std::string& dir, const std::string& flag, int delay_s);
  ~SlowNodeLaunch();
  SlowNodeLaunch(const SlowNodeLaunch&) = delete;
  SlowNodeLaunch& operator=(const SlowNodeLaunch&) = delete;
};

// Runs `cluster add-node --yes` and SIGKILLs it as soon as the new node's process exists, before
// the node listens (its launch is slowed, so this is deterministic), then waits until the node
// listens: node-ID is left as a killed add-node leaves it, an unformed node that is no member,
// with `--listen 127.0.0.1:0` in its args (with --base-port 0). Returns ID (0 on failure, with
// the reason in the test's log).
int KillAddNodeLeavingOrphan(const LocalCluster& c);

}  // namespace shardkv::testing
