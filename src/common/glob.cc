#include "common/glob.h"

#include <cstddef>
#include <utility>

namespace shardkv::common {
namespace {

// Redis compares bytes as (signed) chars; ranges with high bytes order the same way here.
int Byte(char c) { return static_cast<signed char>(c); }

// Matches the pattern element starting at pattern[i] (not `*`) against byte c. Sets *next to
// the index after the element; the element's length never depends on c.
bool MatchOne(std::string_view pattern, size_t i, char c, size_t* next) {
  const size_t m = pattern.size();
  if (pattern[i] == '?') {
    *next = i + 1;
    return true;
  }
  if (pattern[i] == '\\') {
    if (m - i >= 2) ++i;  // a trailing backslash is itself
    *next = i + 1;
    return pattern[i] == c;
  }
  if (pattern[i] != '[') {
    *next = i + 1;
    return pattern[i] == c;
  }
  ++i;
  const bool negate = i < m && pattern[i] == '^';
  if (negate) ++i;
  bool match = false;
  while (true) {
    if (i >= m) break;  // unterminated: the class ends with the pattern
    if (pattern[i] == '\\' && m - i >= 2) {
      ++i;
      if (pattern[i] == c) match = true;
    } else if (pattern[i] == ']') {
      break;
    } else if (m - i >= 3 && pattern[i + 1] == '-') {
      int start = Byte(pattern[i]);
      int end = Byte(pattern[i + 2]);
      if (start > end) std::swap(start, end);
      if (Byte(c) >= start && Byte(c) <= end) match = true;
      i += 2;
    } else if (pattern[i] == c) {
      match = true;
    }
    ++i;
  }
  *next = i < m ? i + 1 : m;  // past the closing bracket
  return negate ? !match : match;
}

}  // namespace

bool GlobMatch(std::string_view pattern, std::string_view text) {
  const size_t m = pattern.size();
  const size_t n = text.size();
  size_t p = 0;
  size_t s = 0;
  bool have_star = false;
  size_t star_p = 0;  // the pattern index just after the last `*` run
  size_t star_s = 0;  // where in the text that `*` currently ends
  while (s < n) {
    if (p < m && pattern[p] == '*') {
      while (p < m && pattern[p] == '*') ++p;
      if (p == m) return true;  // a trailing `*` takes the rest
      have_star = true;
      star_p = p;
      star_s = s;
      continue;
    }
    size_t next = 0;
    if (p < m && MatchOne(pattern, p, text[s], &next)) {
      p = next;
      ++s;
      continue;
    }
    if (!have_star) return false;
    // Let the last `*` take one more byte and retry from there.
    s = ++star_s;
    p = star_p;
  }
  if (n == 0) return m == 0;
  while (p < m && pattern[p] == '*') ++p;
  return p == m;
}

}  // namespace shardkv::common
