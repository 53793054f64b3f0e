// GlobMatch: Redis's glob patterns (SCAN and KEYS MATCH), with the semantics of redis-server
// 7.0's stringmatchlen (case-sensitive): `*` any run of bytes, `?` one byte, `[abc]` one of,
// `[^abc]` none of, `[a-z]` a range (ends in either order), `\x` the byte x (also inside
// brackets). Redis's quirks are kept on purpose, so a pattern selects the same keys here as on
// redis-server: an unterminated `[` class ends at the end of the pattern, `[a-]` is the range
// from `a` to `]`, a trailing `\` is a literal backslash, and an empty string matches only the
// empty pattern (not even `*`).
//
// Iterative (one backtracking point, the last `*`), so a hostile pattern costs at most
// O(pattern * string) steps and no stack: Redis's recursive version needed a guard for that.
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

namespace shardkv::common {

bool GlobMatch(std::string_view pattern, std::string_view text);

}  // namespace shardkv::common
