// Validates a scrape with Prometheus's own checker: `promtool check metrics` (Debian package
// prometheus, installed by tools/install-deps.sh) parses every line with Prometheus's parser and
// lints the names (counters end in _total, base units, HELP present, ...). Exit 0 and no output
// means the text is valid and clean.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"

namespace shardkv::testing {

struct PromtoolResult {
  int exit_code = -1;
  std::string output;  // what promtool printed (problems, one a line)
};

inline PromtoolResult PromtoolCheckMetrics(const std::string& text) {
  TempDir dir;
  const std::string file = dir.Sub("scrape.prom");
  {
    std::ofstream out(file, std::ios::binary);
    out << text;
  }
  PromtoolResult result;
  const std::string command = "promtool check metrics < '" + file + "' 2>&1";
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return result;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) result.output.append(buf, n);
  const int status = ::pclose(p);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace shardkv::testing
