#include "cli_common.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "json_writer.h"

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

std::string WithOutcome(const std::string& object, MutationOutcome outcome) {
  const std::string field = "\"outcome\":" + JsonWriter::Quote(MutationOutcomeName(outcome));
  if (object.size() < 2 || object.front() != '{') return "{" + field + "}";
  const bool empty = object.find_first_not_of(" \t\n", 1) == object.rfind('}');
  return "{" + field + (empty ? "" : ",") + object.substr(1);
}

std::string OutcomeErrorJson(MutationOutcome outcome, std::string_view error) {
  JsonWriter w;
  w.Begin().Field("outcome", MutationOutcomeName(outcome)).Field("error", error).End();
  return w.str();
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace shardkv::cli
