// The pure pieces of the key-value commands' input and output: bounded reading of a value,
// host:port checks, and JSON for arbitrary bytes. No network, no globals: unit-tested in
// tests/client/kv_io_test.cc.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "json_writer.h"
#include "shardkv/mutation_outcome.h"
#include "shardkv/status.h"

namespace shardkv::cli {

// Reads `fd` to its end, but never more than `limit` + 1 bytes: InvalidArgument "value is larger
// than the N MiB limit" as soon as the input is known to be too big (a 1 GiB stdin costs one
// read past the limit, not 1 GiB of memory).
StatusOr<std::string> ReadValueBounded(int fd, size_t limit);
// The error for a value of `size` bytes over `limit` ("" when it fits).
std::string ValueTooLarge(size_t size, size_t limit);
// "16 MiB", "64 KiB", "100 bytes".
std::string HumanLimit(size_t bytes);

// "" if `address` is host:port (port 1-65535, IPv6 in brackets), else why not.
std::string CheckHostPort(const std::string& address);

// True if `s` is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool IsValidUtf8(std::string_view s);
// Standard base64 (RFC 4648, with padding).
std::string Base64Encode(std::string_view bytes);
// "" if `key` is a key the nodes take (not empty, within the key size limit), else why not (the
// node's own wording, checked here so that a bad key costs no connection).
std::string CheckKey(const std::string& key);
// Writes `name`: the bytes as a JSON string when they are valid UTF-8, else `name`_base64: their
// base64, so that --json output is valid JSON for any key or value.
void BytesField(JsonWriter& w, std::string_view name, std::string_view bytes);

// What a failed mutation of `key` (put, del, expire, persist) prints on stdout with --json, so
// a script reads the outcome from the same one object as on success:
// {"key":...,"outcome":"not_applied"|"indeterminate","error":"..."}.
std::string MutationErrorJson(std::string_view key, MutationOutcome outcome, const Status& error);

}  // namespace shardkv::cli
