// Runs a program to completion and captures its exit code, stdout and stderr: how the lab tests
// drive the real `shardkv` binary.
#pragma once

#include <string>
#include <vector>

namespace shardkv::testing {

struct ProcessResult {
  int exit_code = -1;  // -1 when the program could not be started or did not exit normally
  std::string out;
  std::string err;
};

// argv[0] is the program path; no shell is involved, so arguments need no quoting.
ProcessResult RunProcess(const std::vector<std::string>& argv);
// The same with `input` as the program's stdin (written to a temp file first, so a program that
// stops reading early never blocks the caller).
ProcessResult RunProcessWithInput(const std::vector<std::string>& argv, const std::string& input);

}  // namespace shardkv::testing
