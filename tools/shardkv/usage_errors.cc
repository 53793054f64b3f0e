#include "usage_errors.h"

#include <cstdlib>
#include <vector>

namespace shardkv::cli {
namespace {

// Parses all of `s` as a number; false if anything is left over.
bool ParseDouble(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  *out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

// The deepest subcommand that was parsed: the one an unknown word was meant for.
CLI::App* DeepestParsed(CLI::App* app) {
  for (;;) {
    auto subs = app->get_subcommands();
    if (subs.empty()) return app;
    app = subs.front();
  }
}

std::string CommandPath(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr; app = app->get_parent()) names.insert(names.begin(), app->get_name());
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

}  // namespace

std::string RestateRangeError(const std::string& message) {
  const std::string value_mark = ": Value ";
  const std::string range_mark = " not in range ";
  const size_t v = message.find(value_mark);
  const size_t r = message.rfind(range_mark);
  if (v == std::string::npos || r == std::string::npos || r < v) return message;
  const std::string option = message.substr(0, v);
  const std::string value = message.substr(v + value_mark.size(), r - v - value_mark.size());
  const std::string range = message.substr(r + range_mark.size());
  const size_t to = range.find(" to ");
  double x = 0, lo = 0, hi = 0;
  if (!ParseDouble(value, &x)) return option + ": " + value + " is not a number (" + range + ")";
  if (to != std::string::npos && ParseDouble(range.substr(0, to), &lo) &&
      ParseDouble(range.substr(to + 4), &hi) && x >= lo && x <= hi) {
    // In range as a number, yet refused: the option wants digits (1e3, 2.5, 0x10).
    return option + ": " + value + " is not a whole number in digits (" + range + ")";
  }
  return option + ": " + value + " is out of range (" + range + ")";
}

std::string UsageMessage(CLI::App& app, const CLI::ParseError& e) {
  std::string message = e.what();
  if (message.empty()) message = e.get_name();
  CLI::App* where = DeepestParsed(&app);
  const bool expects_command = !where->get_subcommands({}).empty();
  if (expects_command && (e.get_name() == "RequiredError" || e.get_name() == "ExtrasError")) {
    // A word that is no command of `where`: name it, rather than "A subcommand is required".
    for (const std::string& extra : app.remaining(true)) {
      if (extra.empty() || extra[0] == '-') continue;
      const std::string path = CommandPath(where);
      return "unknown command '" + extra + "' for '" + path + "' (see '" + path + " --help')";
    }
    if (where->get_subcommands().empty() && e.get_name() == "RequiredError") {
      const std::string path = CommandPath(where);
      return "'" + path + "' needs a command (see '" + path + " --help')";
    }
  }
  return RestateRangeError(message) + " (see --help)";
}

}  // namespace shardkv::cli
