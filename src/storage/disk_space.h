// The checks of a node's data directory before it starts (design.md "Storage format").
//
// A RocksDB opened on a full disk can die on an internal assertion before it reports anything
// (findings row 9), so a node checks the free space itself first and refuses to start with a
// plain "no space left on device" instead. RocksDB's open of a read-only directory fails on its
// LOCK file with words that read like a lock held by someone else, so writability is checked
// first too.
//
// Thread-safety: the functions are stateless and thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "shardkv/status.h"

namespace shardkv::storage {

// Opening RocksDB writes a new MANIFEST, OPTIONS file and WAL, and replaying a WAL can flush a
// memtable; below this much free space a start is refused.
inline constexpr uint64_t kMinFreeBytesToStart = uint64_t{8} << 20;  // 8 MiB

// The message every full-disk error carries (a client sees it for a failed write); followed by
// the node id.
inline constexpr char kNoSpaceMessage[] = "no space left on device on node ";

// Bytes available to this (unprivileged) process on the file system holding `dir` (statvfs).
StatusOr<uint64_t> FreeBytes(const std::string& dir);

// OK if `free_bytes` is enough to start a node on `dir`; otherwise ResourceExhausted
// "no space left on device in <dir> (...)".
Status CheckFreeSpaceForStart(const std::string& dir, uint64_t free_bytes);

// OK if this process may create files in `dir`; otherwise FailedPrecondition "database
// directory <dir> is on a read-only file system: ..." (EROFS) or "... is not writable by this
// process (...)" (EACCES, EPERM), or IOError for anything else access(2) reports.
Status CheckWritableForStart(const std::string& dir);

}  // namespace shardkv::storage
