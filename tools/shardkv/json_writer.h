// JsonWriter: just enough JSON for the CLI's --json output (objects, arrays, scalars), with
// correct string escaping. Header-only and tiny on purpose.
#pragma once

#include <cinttypes>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>

#include "placement_lab/json.h"

namespace shardkv::cli {

class JsonWriter {
 public:
  static std::string Quote(std::string_view s) { return lab::JsonQuote(s); }

  JsonWriter& Begin() { return Open('{'); }
  JsonWriter& End() { return Close('}'); }
  JsonWriter& BeginArray() { return Open('['); }
  JsonWriter& EndArray() { return Close(']'); }
  JsonWriter& Key(std::string_view k) {
    Comma();
    out_ += Quote(k) + ":";
    after_key_ = true;
    return *this;
  }
  template <typename T>
  JsonWriter& Field(std::string_view k, const T& v) {
    Key(k);
    return Value(v);
  }
  JsonWriter& Value(std::string_view s) { return Raw(Quote(s)); }
  JsonWriter& Value(const std::string& s) { return Raw(Quote(s)); }
  JsonWriter& Value(const char* s) { return Raw(Quote(s)); }
  JsonWriter& Value(bool b) { return Raw(b ? "true" : "false"); }
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  JsonWriter& Value(T v) {
    if constexpr (std::is_floating_point_v<T>) {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.6g", static_cast<double>(v));
      return Raw(buf);
    } else {
      return Raw(std::to_string(v));
    }
  }
  JsonWriter& Raw(std::string_view json) {
    Comma();
    out_ += json;
    return *this;
  }
  const std::string& str() const { return out_; }

 private:
  JsonWriter& Open(char c) {
    Comma();
    out_ += c;
    first_ = true;
    return *this;
  }
  JsonWriter& Close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  void Comma() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_ && !out_.empty()) out_ += ',';
    first_ = false;
  }

  std::string out_;
  bool first_ = true;
  bool after_key_ = false;
};

}  // namespace shardkv::cli
