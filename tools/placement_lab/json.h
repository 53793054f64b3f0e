// JSON string quoting shared by every --json output (CLI, lab, benchmarks).
#pragma once

#include <string>
#include <string_view>

namespace shardkv::lab {

// `s` as a JSON string literal, quotes included; control characters are \u-escaped.
std::string JsonQuote(std::string_view s);

}  // namespace shardkv::lab
