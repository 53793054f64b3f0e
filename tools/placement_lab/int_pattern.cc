#include "placement_lab/int_pattern.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace shardkv::lab {
namespace {

bool IsFlag(char c) { return std::strchr("-+ #0", c) != nullptr && c != '\0'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsLength(char c) { return std::strchr("hljztLq", c) != nullptr && c != '\0'; }

Status BadPattern(std::string_view pattern, std::string_view why) {
  return Status::InvalidArgument("bad pattern '" + std::string(pattern) + "': " + std::string(why) +
                                 " (expected one integer conversion, like user:%d or cache-%02d)");
}

}  // namespace

StatusOr<IntPattern> IntPattern::Parse(std::string_view pattern) {
  std::string format;
  format.reserve(pattern.size() + 2);
  int conversions = 0;
  bool is_signed = false;
  size_t i = 0;
  while (i < pattern.size()) {
    char c = pattern[i];
    if (c != '%') {
      format += c;
      ++i;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '%') {
      format += "%%";
      i += 2;
      continue;
    }
    // A conversion: %[flags][width][.precision][length]conv
    size_t j = i + 1;
    while (j < pattern.size() && IsFlag(pattern[j])) ++j;
    // Width and precision are capped so that a pattern cannot ask for megabytes per name.
    size_t digits = 0;
    while (j < pattern.size() && IsDigit(pattern[j])) ++j, ++digits;
    if (j < pattern.size() && pattern[j] == '.') {
      ++j;
      size_t precision_digits = 0;
      while (j < pattern.size() && IsDigit(pattern[j])) ++j, ++precision_digits;
      digits = std::max(digits, precision_digits);
    }
    if (digits > 2) return BadPattern(pattern, "width or precision above 99");
    std::string spec(pattern.substr(i, j - i));  // '%' + flags, width, precision
    // A '*' width would read an int argument that is never passed, so it is caught here too.
    while (j < pattern.size() && IsLength(pattern[j])) ++j;
    if (j >= pattern.size()) return BadPattern(pattern, "a '%' at the end");
    char conv = pattern[j];
    if (std::strchr("diuxXo", conv) == nullptr) {
      return BadPattern(pattern, std::string("'%") + conv + "' is not an integer conversion");
    }
    if (++conversions > 1) return BadPattern(pattern, "more than one conversion");
    is_signed = conv == 'd' || conv == 'i';
    format += spec;
    format += "ll";
    format += conv;
    i = j + 1;
  }
  if (conversions == 0) return BadPattern(pattern, "no conversion");
  return IntPattern(std::string(pattern), std::move(format), is_signed);
}

void IntPattern::AppendTo(uint64_t value, std::string* out) const {
  // The fixed part of the pattern is usually short; one retry covers long ones.
  char buf[128];
  int n = signed_ ? std::snprintf(buf, sizeof(buf), format_.c_str(), static_cast<long long>(value))
                  : std::snprintf(buf, sizeof(buf), format_.c_str(),
                                  static_cast<unsigned long long>(value));
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(buf)) {
    out->append(buf, static_cast<size_t>(n));
    return;
  }
  size_t old = out->size();
  out->resize(old + static_cast<size_t>(n) + 1);
  if (signed_) {
    std::snprintf(out->data() + old, static_cast<size_t>(n) + 1, format_.c_str(),
                  static_cast<long long>(value));
  } else {
    std::snprintf(out->data() + old, static_cast<size_t>(n) + 1, format_.c_str(),
                  static_cast<unsigned long long>(value));
  }
  out->resize(old + static_cast<size_t>(n));
}

std::string IntPattern::Format(uint64_t value) const {
  std::string out;
  AppendTo(value, &out);
  return out;
}

}  // namespace shardkv::lab
