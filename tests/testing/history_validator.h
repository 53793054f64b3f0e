// The recorded history of a key-value workload and the pure checks run on it (design.md
// "Testing", the history checker). No I/O and no threads here, so the invariants can be unit-tested
// on hand-built histories; HistoryChecker (history_checker.h) records real ones against a cluster.
//
// Model: each key has a single writer, which issues writes one at a time with versions 1, 2, 3...
// A put stores EncodeValue(key, version); a delete stores a tombstone and also consumes a version.
// Because one client issues all writes of a key in order, its HLC makes each later write win over
// every earlier one, so the versions of a key are totally ordered by issue order.
//
// Times are microseconds on one steady clock. An op's `issued` is taken before its request is
// sent and `completed` after its reply arrives; a read's `start` before and `end` after. The checks
// treat "acknowledged before the read began" as completed < start and "issued before the read
// ended" as issued <= end, so imprecise timing can hide a violation but never invent one.
//
// Thread-safety: value types and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::testing {

// Microseconds since the recording began (steady clock).
using Micros = int64_t;

enum class OpKind : uint8_t { kPut, kDelete };

enum class OpOutcome : uint8_t {
  kPending,  // no reply yet; treated like kFailed (may or may not be applied)
  kAcked,
  kFailed,  // returned an error: the write may or may not have been applied
};

struct WriteRecord {
  uint64_t version = 0;
  OpKind kind = OpKind::kPut;
  Micros issued = 0;
  Micros completed = 0;  // meaningless while kPending
  OpOutcome outcome = OpOutcome::kPending;
  std::string error;  // set when kFailed
};

struct ReadRecord {
  Micros start = 0;
  Micros end = 0;
  std::optional<uint64_t> version;  // nullopt: the key was absent (NotFound)
};

struct KeyHistory {
  std::string key;
  std::vector<WriteRecord> writes;  // any order; versions unique
  std::vector<ReadRecord> reads;
};

// The value a put of `version` writes: "v=<version>;key=<key>;" padded with '.' to at least
// `min_bytes`. The key is inside so that a value served for the wrong key is caught too.
std::string EncodeValue(std::string_view key, uint64_t version, size_t min_bytes = 0);

// The version in a value made by EncodeValue for `key`. Corruption (quoting the start of the
// value) if it is not one: malformed, or written for another key.
StatusOr<uint64_t> DecodeValue(std::string_view key, std::string_view value);

// Invariant 1, for every read in `history`: a read returns neither a version older than the last
// write acknowledged before it began, nor a version that was not issued (as a put) before it
// ended; it returns "absent" only if no put was acknowledged before it began or a delete at least
// as new as that put was issued before it ended. One readable message per violation.
std::vector<std::string> CheckReads(const KeyHistory& history);

// Invariants 2 and 3, for the value a read returned after every write completed
// (`final_version`, nullopt = absent): it must be the state left by the last acknowledged write,
// or by a later write that failed (which may have been applied). So an acknowledged put must be
// present, and a key whose last acknowledged write was a delete must stay absent, also after
// tombstone GC. REQUIRES: no write of the key is still in flight.
std::vector<std::string> CheckFinal(const KeyHistory& history,
                                    std::optional<uint64_t> final_version);

// "v=7 put acked, issued t=12.345ms, completed t=12.900ms": for messages.
std::string DescribeWrite(const WriteRecord& write);

}  // namespace shardkv::testing
