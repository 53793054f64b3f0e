// ASCII case folding for command names and options: Redis matches them case-insensitively
// (`get`, `GET` and `Get` are one command), byte by byte, whatever the locale.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace shardkv::redis {

inline std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace shardkv::redis
