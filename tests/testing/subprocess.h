// Runs a program to completion and captures its exit code, stdout and stderr: how the lab, CLI
// and multi-process tests drive the real `shardkv` and `shardkv-node` binaries.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace shardkv::testing {

struct ProcessResult {
  int exit_code = -1;      // -1 when the program could not be started or did not exit normally
  bool timed_out = false;  // it ran past its time limit and was SIGKILLed
  std::string out;
  std::string err;
  // Everything above, for INFO.
  std::string Text() const;
};

// argv[0] is the program path; no shell is involved, so arguments need no quoting. Output goes
// to temp files, not pipes: no poll loop, no deadlock on large output.
ProcessResult RunProcess(const std::vector<std::string>& argv);
// The same, SIGKILLing the program if it runs past `limit` (a hung command fails the test
// instead of hanging ctest).
ProcessResult RunProcess(const std::vector<std::string>& argv, std::chrono::milliseconds limit);
// The same with `input` as the program's stdin (written to a temp file first, so a program that
// stops reading early never blocks the caller).
ProcessResult RunProcessWithInput(const std::vector<std::string>& argv, const std::string& input);

// The whole content of the file at `path` ("" if it cannot be read): a node's log, port file or
// a command's saved output.
std::string ReadAll(const std::string& path);

}  // namespace shardkv::testing
