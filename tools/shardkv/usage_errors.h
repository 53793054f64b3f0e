// The one-line message for a command line CLI11 refused (exit 2), in the user's terms: the
// unknown word of an unknown command, "not a number" for a value that is none.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace shardkv::cli {

// REQUIRES: `app` is the root app whose parse() threw `e`.
std::string UsageMessage(CLI::App& app, const CLI::ParseError& e);

// CLI11's range message "OPT: Value V not in range LO to HI" restated: "OPT: V is not a
// number", "... is not a whole number", or "... is out of range (LO to HI)". Any other message
// comes back unchanged. Pure, for tests.
std::string RestateRangeError(const std::string& message);

}  // namespace shardkv::cli
