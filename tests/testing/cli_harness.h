// A local cluster driven through the real `shardkv` CLI, for multi-process tests: a unique
// directory, commands run with `--dir`, and cleanup (`cluster down`, then SIGKILL of anything
// left, then the directory) on destruction, also when an assertion failed.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "testing/subprocess.h"

namespace shardkv::testing {

// Alive and not a zombie: the nodes' parent (the CLI) has exited, and in a container PID 1 may
// never reap them, so kill(pid, 0) alone would report a dead node as alive.
bool Alive(pid_t pid);
std::optional<pid_t> ReadPid(const std::string& path);
size_t LineCount(const std::string& s);
// True if `part` occurs in `s`.
inline bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

class LocalCluster {
 public:
  LocalCluster();
  ~LocalCluster();
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Runs `shardkv ARGS... --dir DIR` (the global --dir falls through from any subcommand).
  ProcessResult Run(std::vector<std::string> args) const;
  // The same with `input` as the CLI's stdin.
  ProcessResult RunWithInput(std::vector<std::string> args, const std::string& input) const;
  // The pids currently recorded in node-*/pid.
  std::vector<pid_t> Pids() const;
  const std::string& dir() const { return dir_; }
  // The port node `id` wrote to D/node-ID/port ("0" before it wrote one).
  std::string NodePort(int id) const;

 private:
  std::vector<std::string> Argv(std::vector<std::string> args) const;
  std::string dir_;
};

// One node of `cluster status --json`, read field by field (the schema may gain fields).
struct StatusNode {
  int id = 0;
  std::string state;
  bool alive = false;
  double share_pct = -1;
  int64_t keys = -1;  // -1: null
};

// The value of "key" in a flat JSON object (strings unquoted; "" when absent).
std::string Field(const std::string& object, const std::string& key);
// The nodes of `cluster status --json`, by id.
std::map<int, StatusNode> ParseStatus(const std::string& json);

}  // namespace shardkv::testing
