// A minimal JSON reader for tests: enough to check that the lab's --json output is valid JSON
// and to read fields back. Strict (RFC 8259 grammar; \u escapes kept only for ASCII), small,
// and test-only, so the project needs no JSON dependency.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardkv::testing {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in document order

  bool is_null() const { return type == Type::kNull; }
  // The member named `key`, or nullptr.
  const JsonValue* Find(std::string_view key) const {
    for (const auto& [k, v] : object) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

// Parses a whole document (surrounding whitespace allowed). nullopt when it is not valid JSON.
std::optional<JsonValue> ParseJson(std::string_view text);

}  // namespace shardkv::testing
