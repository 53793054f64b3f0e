// Bed: a small network of hosts made of Linux network namespaces, one shardkv-node in each
// (design.md "Multi-host test bed"). It is the multi-host harness of issue 11; Nemesis
// (nemesis.h) injects faults into it.
//
// Layout of one run (all names unique per run, so parallel runs and stale leftovers never
// collide): a bridge `shardkv<pid hex>-b` in the root namespace holding 10.213.S.1/24, and per
// host i (1-based) a namespace `shardkv-<pid>-h<i>` whose `eth0` (the peer of the root-side veth
// `shardkv<pid hex>-<i>`) holds 10.213.S.(10+i)/24. S is chosen per run among the /24s no route
// of this host uses. Node i listens on 10.213.S.(10+i):7000 with its data in <dir>/n<i>.
//
// Everything it makes is removed by the destructor, by Cleanup(), and by an atexit/fatal-signal
// hook (a test that aborts); Create() first removes the leftovers of dead runs (prefix `shardkv`,
// a pid that no longer exists). ip and iptables are run as programs (no library exists for them
// in Debian), so the bed needs root: Create() says why it cannot run (Unavailable) otherwise.
//
// Thread-safety: none; one test thread drives a Bed.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::multihost {

struct BedOptions {
  int hosts = 3;
  std::string dir;                     // run directory (node data, logs); REQUIRED
  std::string node_path;               // the shardkv-node binary
  std::string cli_path;                // the shardkv CLI binary
  std::vector<std::string> node_args;  // extra arguments of every node
  // The cluster secret, passed as --auth-secret-file when shardkv-node lists that flag (else
  // --insecure when it lists that: a node on a non-loopback address needs one or the other).
  std::string secret_file;
};

// Output of a program run by the bed.
struct Command {
  int exit_code = -1;
  std::string out;  // stdout and stderr
};

class Bed {
 public:
  // Checks root and `ip`, removes dead runs' leftovers, makes the namespaces, links and
  // addresses. Unavailable (saying why) when namespaces cannot be made here.
  static StatusOr<std::unique_ptr<Bed>> Create(BedOptions options);
  ~Bed();  // Cleanup()
  Bed(const Bed&) = delete;
  Bed& operator=(const Bed&) = delete;

  int hosts() const { return static_cast<int>(namespaces_.size()); }
  // Adds a host (namespace, veth, address) and returns its 1-based index; no node runs on it.
  StatusOr<int> AddHost();
  const std::string& Namespace(int host) const { return namespaces_.at(host - 1); }
  std::string Ip(int host) const;
  std::string Address(int host) const { return Ip(host) + ":7000"; }  // node `host`'s
  std::vector<std::string> Addresses(const std::vector<int>& hosts) const;
  std::string AllAddresses() const;  // of every host, comma separated
  const std::string& dir() const { return options_.dir; }
  const std::string& cli_path() const { return options_.cli_path; }
  // Whether shardkv-node knows --insecure (protected mode); the bed passes it when it does.
  bool node_has_insecure() const { return node_has_insecure_; }
  bool node_has_secret_flag() const { return node_has_secret_flag_; }

  // Starts node `host` (id = host) in its namespace, its wall clock `skew_ms` off (libfaketime,
  // monotonic clock untouched), and waits until it answers a ping. Data survives restarts.
  Status StartNode(int host, int skew_ms = 0, const std::vector<std::string>& extra = {});
  void KillNode(int host);  // SIGKILL and reap
  // SIGTERM (a graceful stop: the node finishes in-flight requests, flushes and exits 0) and
  // reap; SIGKILL if it has not exited after `limit`. Returns the exit status (-1: killed, or it
  // never ran).
  int StopNode(int host, std::chrono::milliseconds limit = std::chrono::seconds(10));
  void PauseNode(int host);                       // SIGSTOP
  void ResumeNode(int host);                      // SIGCONT
  Status RestartNode(int host, int skew_ms = 0);  // KillNode + StartNode, same data
  bool NodeRunning(int host) const;
  // The node's wall clock minus the real one, in ms: the stamp of the newest line of the node's
  // log against the file's modification time. Shows that a skew took effect. Error if the log
  // has no stamped line.
  StatusOr<int64_t> ObservedSkewMs(int host) const;

  // Runs argv in host's namespace (host 0: the root namespace), waiting at most `limit`.
  Command Run(int host, const std::vector<std::string>& argv,
              std::chrono::milliseconds limit = std::chrono::seconds(60)) const;
  // `shardkv --cluster <seeds> <args...>` from `host` (0: root namespace).
  Command Cli(int host, const std::vector<std::string>& seeds, const std::vector<std::string>& args,
              std::chrono::milliseconds limit = std::chrono::seconds(60)) const;
  // argv prefixed to run a program inside host's namespace (host 0: nothing).
  std::vector<std::string> InNamespace(int host, std::vector<std::string> argv) const;

  // Kills the nodes, deletes the namespaces and links. Idempotent.
  void Cleanup();
  // Names of this run still present (`ip netns list`, `ip link`): empty after Cleanup().
  std::vector<std::string> Leftovers() const;
  // The tag every name of this run carries.
  const std::string& tag() const { return tag_; }

 private:
  struct NodeProcess;
  explicit Bed(BedOptions options);
  Status Setup();
  Status AddHostLocked();

  BedOptions options_;
  std::string tag_;      // "<pid>"
  std::string tag_hex_;  // pid in hex, for interface names (15 characters at most)
  int subnet_ = 0;       // S of 10.213.S.0/24
  bool bridge_made_ = false;
  bool node_has_insecure_ = false;
  bool node_has_secret_flag_ = false;
  std::vector<std::string> namespaces_;
  std::vector<std::unique_ptr<NodeProcess>> nodes_;  // index host-1; null when never started
};

// `program`'s path through PATH (and /usr/sbin, /sbin); unchanged if it has a '/' or is not found.
std::string Which(const std::string& program);

// Runs argv (no shell) and captures its output, SIGKILLing it after `limit`.
Command RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds limit);

// Removes namespaces and links with the `shardkv` prefix whose run's pid is dead. Returns what
// it removed.
std::vector<std::string> RemoveDeadRuns();

}  // namespace shardkv::multihost
