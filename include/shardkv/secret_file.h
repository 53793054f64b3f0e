// LoadSecretFile: reads a shared secret (the cluster secret or the client secret) from a file.
//
// The file may hold any bytes; trailing whitespace (space, tab, CR, LF, VT, FF) is stripped so
// that `echo secret > file` and an editor's final newline do not change the secret. What remains
// must be at least kMinSecretBytes long. A file that others may read is still accepted (the
// owner may have reasons), but the result carries a warning for the caller to log or print.
//
// Public (implemented in src/common, part of the client-side libraries, no RocksDB) so that the
// node, Client, Admin and the CLI all read a secret file the same way.
//
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "shardkv/status.h"

namespace shardkv {

inline constexpr size_t kMinSecretBytes = 16;
// A secret file larger than this is refused: a secret is a few dozen bytes, not a document.
inline constexpr size_t kMaxSecretFileBytes = 64 * 1024;

struct SecretFile {
  std::string secret;   // the bytes, trailing whitespace stripped
  std::string warning;  // non-empty: say this (the file is world-readable)
};

// `what` names the option in messages, e.g. "--auth-secret-file". InvalidArgument naming the
// file and the rule when it cannot be read or is too short (or too long).
StatusOr<SecretFile> LoadSecretFile(const std::string& path, std::string_view what);

}  // namespace shardkv
