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

// The bytes a read of a live record returns: an active counter's decimal value, else the value
// register's bytes (moved out of `e`).
std::string ReadValue(Envelope&& e);

// The record a counter write sends to the key's replicas: `entry` alone (both registers "no
// opinion"), or over a reset of the registers to "0" at version `reset` (INCR of an expired
// key: every coordinator that saw the same expired record picks the same reset version, so
// their increments add up). REQUIRES: entry.base == reset when reset is given.
Envelope CounterWrite(const CounterEntry& entry, std::optional<Version> reset);

}  // namespace shardkv::storage
