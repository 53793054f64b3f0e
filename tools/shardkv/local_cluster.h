// LocalCluster: the process side of `shardkv cluster ...` (the ccm of shardkv): spawning
// detached shardkv-node processes, pid checks, port probing and bounded waits, stopping nodes and
// the directory lock. The layout of a local cluster directory and its files (cluster.conf, the
// node-<id> directories, pid/port/stopped_at files) are in cluster_dir.h, included here so that
// users of this header see both.
//
// Nothing here prints; the caller (cluster_commands.cc) decides what the user sees.
//
// Thread-safety: the free functions are thread-safe; DirLock and NodeProber are not shared.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster_dir.h"
#include "credentials.h"
#include "node_args.h"
#include "shardkv/admin.h"
#include "shardkv/status.h"

namespace shardkv::cli {

using SteadyClock = std::chrono::steady_clock;

// The shardkv-node binary: $SHARDKV_NODE_BIN, else next to this executable, else the build
// tree's ../shardkv-node/shardkv-node, else $PATH. NotFound naming every place tried.
StatusOr<std::string> FindNodeBinary();

// True if `pid` is a live process. A zombie counts as dead: a node whose parent (the CLI) has
// exited is reparented to PID 1, which in a container may never reap it, and kill(pid, 0)
// succeeds on a zombie. Reaps `pid` if it is our own exited child.
bool ProcessAlive(pid_t pid);
// The exit status of a node this invocation started, once ProcessAlive found it exited (and
// reaped it); nullopt for another process, one still running, or one killed by a signal.
std::optional<int> ExitStatusOf(pid_t pid);
// shardkv-node's exit status when a member's data directory holds no database of its cluster.
inline constexpr int kNodeExitNeedsRebuild = 3;
// The pid of node `node_dir`'s running process: its pid file names a live process whose command
// line carries `node_dir` (so a recycled pid of an unrelated process is never mistaken for the
// node, and never signalled).
std::optional<pid_t> RunningNodePid(const std::string& node_dir);

// Starts `binary args...` in its own session (fork + setsid + exec), detached from the CLI so it
// outlives it: stdin /dev/null, stdout and stderr appended to `log_path`, working directory
// `cwd`. Returns once exec succeeded (a failed exec is reported as an error, not as a process
// that dies later).
StatusOr<pid_t> SpawnDetached(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& log_path, const std::string& cwd);

// Launches node `id` of `dir` with `args`: clears its stale port file, writes args, spawns,
// writes the pid file and clears stopped_at.
StatusOr<pid_t> LaunchNode(const std::string& binary, const std::string& dir, uint32_t id,
                           const std::vector<std::string>& args);

// True if 127.0.0.1:port can be bound right now (probed the way the node binds: SO_REUSEADDR).
bool PortFree(uint16_t port);

// The last `max_lines` lines of `path`, for error reports.
std::vector<std::string> TailLines(const std::string& path, size_t max_lines);

// Unix time in seconds.
int64_t UnixNow();

// Polls `done` every `interval` until it returns true (-> true) or `deadline` passes (-> false).
// A poll, not a blind sleep: it returns as soon as the condition holds.
bool PollUntil(SteadyClock::time_point deadline, const std::function<bool()>& done,
               std::chrono::milliseconds interval = std::chrono::milliseconds(25));

// Probes of single nodes (any cluster) over one Admin, whose connections are reused across
// polls, so waiting for N nodes does not open a socket per poll.
class NodeProber {
 public:
  // `credentials`: GlobalOptions::credentials (the secret file was checked when parsing).
  explicit NodeProber(const Credentials& credentials = {});
  // OK if `address` answers a ping within `timeout`.
  Status Ping(const std::string& address, std::chrono::milliseconds timeout);
  // Sets the timeout of the probes that follow. Not while Probe runs; Probe itself may run on
  // several threads at once.
  void SetTimeout(std::chrono::milliseconds timeout);
  NodeProbe Probe(const std::string& address);
  // The Admin underneath (cluster formation).
  Admin* admin() { return admin_.get(); }

 private:
  std::unique_ptr<Admin> admin_;
  std::chrono::milliseconds timeout_{5000};  // AdminOptions' default
};

// One node to wait for in WaitListening.
struct PendingNode {
  uint32_t id = 0;
  pid_t pid = 0;
};
// The nodes of cluster directory `dir` whose process runs (RunningNodePid), by id.
std::vector<PendingNode> RunningNodes(const std::string& dir);

// Waits until every node in `nodes` has written its port file (and metrics_port, if launched
// with --metrics-listen) and answers a ping, or `deadline`.
// Fails early, naming the node and quoting its log, if a node process exits. `progress(ready,
// total)` is called whenever a node becomes ready. On success fills `ports` (by position in
// `nodes`); when a node exited, sets *exited_id to its id (else 0).
Status WaitListening(const std::string& dir, const std::vector<PendingNode>& nodes,
                     SteadyClock::time_point deadline, NodeProber* prober,
                     const std::function<void(size_t, size_t)>& progress,
                     std::vector<uint16_t>* ports, uint32_t* exited_id);

// Outcome of stopping one node.
struct StopOutcome {
  uint32_t id = 0;
  pid_t pid = 0;
  bool stopped = false;      // the process is gone
  bool needed_kill = false;  // SIGTERM did not stop it before the deadline, so SIGKILL was sent
};

// Sends `sig` (SIGTERM or SIGKILL) to each node's process and waits until all are gone or
// `deadline`. With SIGTERM and `kill_after_deadline`, stragglers then get SIGKILL and another
// `kill_grace` to disappear. Every stopped node loses its pid file and gains stopped_at.
std::vector<StopOutcome> StopNodes(const std::string& dir, const std::vector<PendingNode>& nodes,
                                   int sig, SteadyClock::time_point deadline,
                                   bool kill_after_deadline, std::chrono::milliseconds kill_grace);

// Exclusive advisory lock on D/.launcher.lock, so that two launcher commands never change one
// directory at once. Released on destruction; the fd is close-on-exec so nodes never inherit it.
class DirLock {
 public:
  // FailedPrecondition if another launcher holds it.
  static StatusOr<std::unique_ptr<DirLock>> Acquire(const std::string& dir);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  explicit DirLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace shardkv::cli
