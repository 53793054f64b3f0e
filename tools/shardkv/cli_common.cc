#include "cli_common.h"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace shardkv::cli {

int ReportError(std::string_view message, int exit_code) {
  std::string line = "error: ";
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  while (!line.empty() && line.back() == ' ') line.pop_back();
  line += '\n';
  std::fputs(line.c_str(), stderr);
  return exit_code;
}

int ReportError(const Status& status, int exit_code) {
  // The message alone reads better than "invalid argument: ..." for a user at a terminal; the
  // code is carried by the exit code.
  return ReportError(status.message().empty() ? status.ToString() : status.message(), exit_code);
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace shardkv::cli
