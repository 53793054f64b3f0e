// What a counter record reads as (design.md "Counters"): the value register's integer (0 when
// it holds a tombstone or nothing) plus every entry's increments less its decrements, of the
// entries that count over that register (value_envelope.h CounterEntry).
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/value_envelope.h"

namespace shardkv::storage {

// Redis's integer syntax (its string2ll): an optional '-', then decimal digits without a leading
// zero (except "0" itself), nothing else, within int64. Nullopt otherwise.
std::optional<int64_t> ParseCounterInteger(std::string_view text);

// The integer the value register holds: 0 for a tombstone or an absent value, nullopt for a
// value that is not an integer (INCR of it is refused, as by Redis).
std::optional<int64_t> CounterBase(const Envelope& e);

// The counter's value: CounterBase plus the active entries' totals; nullopt when the base is not
// an integer or the sum leaves int64.
std::optional<int64_t> CounterValue(const Envelope& e);

// The bytes a read at wall-clock `now_ms` of a record live then returns: an active counter's
// decimal value (after the record's expiry, the counts from nothing that outlived it), else the
// value register's bytes (moved out of `e`).
std::string ReadValue(Envelope&& e, uint64_t now_ms);

// The record a counter write sends to the key's replicas: `entry` alone (both registers "no
// opinion"), or with a tombstone at version `death` (INCR of an expired key: every coordinator
// that read the same expired record writes the same Envelope::ExpiryDeath, so the expired value
// cannot come back under a later EXPIRE or PERSIST, and their counts from nothing, begun after
// it, add up).
Envelope CounterWrite(const CounterEntry& entry, std::optional<Version> death);

}  // namespace shardkv::storage
