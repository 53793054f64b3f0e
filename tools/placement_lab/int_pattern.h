// IntPattern: a printf-style pattern with exactly one integer conversion, such as "user:%d" or
// "cache-%02d". The placement lab uses it to generate key and node names the way the seeds did.
//
// Only integer conversions are accepted (d, i, u, x, X, o, with the usual flags, width and
// precision; any length modifier is ignored and replaced by ll), because a pattern reaches
// snprintf and a %s or a second conversion there would read arguments that were never passed.
// "%%" is a literal percent sign.
//
// Thread-safety: immutable after Parse(); Format() is const.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "shardkv/status.h"

namespace shardkv::lab {

class IntPattern {
 public:
  // Errors: no conversion, more than one, or a conversion that is not an integer one.
  static StatusOr<IntPattern> Parse(std::string_view pattern);

  // The pattern with `value` substituted. Signed conversions (d, i) print value as a signed
  // 64-bit number; the others print it unsigned.
  std::string Format(uint64_t value) const;
  // Appends Format(value) to *out without a temporary string.
  void AppendTo(uint64_t value, std::string* out) const;

  const std::string& pattern() const { return pattern_; }
  // True for d and i, whose output for values >= 2^63 would be negative.
  bool is_signed() const { return signed_; }

 private:
  IntPattern(std::string pattern, std::string printf_format, bool is_signed)
      : pattern_(std::move(pattern)), format_(std::move(printf_format)), signed_(is_signed) {}

  std::string pattern_;  // as the user wrote it
  std::string format_;   // the same with the length modifier forced to ll
  bool signed_;
};

}  // namespace shardkv::lab
