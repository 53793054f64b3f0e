// The value envelope stored under every data key: two last-write-wins registers around the
// user's value bytes.
//
//   value register   (value version, tombstone | value | absent)
//   expiry register  (expiry version, expires_at_ms; 0 = no expiry)
//
// Why two registers: an EXPIRE or PERSIST writes the expiry register only, so it can never
// overwrite a newer value (and a SET ... KEEPTTL writes the value register only). Merging two
// envelopes takes, per register, the one with the higher version (Merge below). A plain write
// (SET, Put without TTL, Delete) writes both registers with the same version and "no expiry", as
// Redis's SET clears a TTL.
//
// Encoding (all multi-byte integers little-endian):
//
//   format 1 (every record written before TTLs, and every plain write since):
//   offset  size   field
//   0       1      format (= kEnvelopeFormatV1)
//   1       1      flags: bit 0 = tombstone; bits 1-7 reserved, must be 0
//   2       8      value HLC timestamp (fixed64)
//   10      1..5   value writer node id (varint32: 1 byte for ids < 128)
//   ...     rest   value bytes (empty for a tombstone)
//   Its expiry register is implied: expiry version = value version, expires_at = 0.
//
//   format 2 (any other combination of the two registers):
//   0       1      format (= kEnvelopeFormatV2)
//   1       1      flags: bit 0 = tombstone, bit 1 = value absent (an expiry-only record);
//                  bits 2-7 reserved, must be 0; bits 0 and 1 are never both set
//   2       8      value HLC timestamp (fixed64; 0 with node 0 when the value is absent)
//   10      1..5   value writer node id (varint32)
//   ...     8      expiry HLC timestamp (fixed64; 0 with node 0 = "no opinion", loses to any)
//   ...     1..5   expiry writer node id (varint32)
//   ...     8      expires_at_ms (fixed64; Unix ms, 0 = no expiry)
//   ...     rest   value bytes (empty for a tombstone or an absent value)
//
//   format 3 (a record with counter entries, design.md "Counters"): format 2's layout and flags,
//   with the counter section between expires_at_ms and the value bytes:
//   ...     1..5   entry count n (varint32; 1..kMaxCounterWriters)
//   n times, in strictly ascending (actor, base) order:
//           8      actor (fixed64: writer node id << 32 | the writer storage's incarnation)
//           8      base HLC timestamp (fixed64): the value register version it counts over, or
//                  for a count from nothing the HLC time it began
//           1..5   base writer node id (varint32; kCountFromNothing for a count from nothing)
//           1..10  increments (varint64)
//           1..10  decrements (varint64)
//   ...     rest   value bytes
//
//   format 4 (a record with hash fields, design.md "Hashes"): format 3's layout, its counter
//   section always present (count 0 when it has no entries), then the hash section before the
//   value bytes:
//   ...     1..5   field count m (varint32; 1..kMaxHashFields)
//   m times, in strictly ascending field-name order (bytewise):
//           1..5   name length (varint32), then the name bytes
//           8      field HLC timestamp (fixed64)
//           1..5   field writer node id (varint32)
//           1      flags: bit 0 = deleted (an HDEL); bits 1-7 reserved, must be 0
//           1..5   value length (varint32; 0 when deleted), then the value bytes
//   ...     rest   value bytes
//
//   format 5 (a record with set members, design.md "Sets"): format 4's layout, its counter and
//   hash sections always present (either count may be 0), then the set section before the value
//   bytes:
//   ...     1..5   entry count s (varint32; 1..kMaxSetEntries)
//   s times, in strictly ascending (member, actor) order (members bytewise):
//           1..5   member length (varint32), then the member bytes
//           1..5   actor: the adding node's id (varint32)
//           8      add: the HLC time of the actor's latest add of the member (fixed64; > 0)
//           8      removed: the latest add time a remove observed (fixed64; 0 = none; <= add)
//           8      removed_at: the HLC time of that remove (fixed64; 0 exactly when removed is)
//   ...     rest   value bytes
//
// EncodeEnvelope writes format 1 whenever it can, so old data directories need no rewrite and a
// store without TTLs stays byte-identical. This build refuses any other format with NotSupported
// rather than guess, and reserved flag bits with Corruption.
//
// Ordering: versions compare as (timestamp, node_id) lexicographically; the larger wins (LWW).
// Equal timestamps from different coordinators are broken by node id, so every replica picks the
// same winner; an identical (timestamp, node_id) is the same write, applied at most once.
//
// Pure functions and value types; thread-safe.
#pragma once

#include <algorithm>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::storage {

inline constexpr uint8_t kEnvelopeFormatV1 = 1;
inline constexpr uint8_t kEnvelopeFormatV2 = 2;
inline constexpr uint8_t kEnvelopeFormatV3 = 3;
inline constexpr uint8_t kEnvelopeFormatV4 = 4;
inline constexpr uint8_t kEnvelopeFormatV5 = 5;
// Fields a hash may hold, deleted ones included (design.md "Hashes").
inline constexpr size_t kMaxHashFields = 65536;
// Entries a set may hold: one per member and node that added it, removed ones included (design.md
// "Sets").
inline constexpr size_t kMaxSetEntries = 65536;
// Writers a counter may have: one per node and storage incarnation (a rebuilt node is a new
// writer), so a small cluster stays far below it.
inline constexpr size_t kMaxCounterWriters = 1024;
// The base node id of an entry that counts from nothing (design.md "Counters": counts from
// nothing): its base timestamp is then the HLC time the writer began counting, not a version.
// No node has this id (ids are below 2^30).
inline constexpr uint32_t kCountFromNothing = 0xFFFFFFFFu;
inline constexpr uint8_t kEnvelopeFlagTombstone = 0x01;
inline constexpr uint8_t kEnvelopeFlagValueAbsent = 0x02;
// Smallest possible encoding: format, flags, timestamp and a 1-byte node id.
inline constexpr size_t kEnvelopeMinBytes = 1 + 1 + 8 + 1;

// The LWW order key of a write.
struct Version {
  uint64_t timestamp = 0;
  uint32_t node_id = 0;
  friend auto operator<=>(const Version&, const Version&) = default;
};

// One writer's share of a counter (a PN-counter entry; design.md "Counters"). Only the writer
// `actor` ever raises its own totals, so replicas merge entries by maximum, and an entry counts
// only while the value register still has the version `base` it was added over: a SET or DEL
// with a newer version resets the counter (increments it had not seen are ordered before it).
//
// A count from nothing (base.node_id == kCountFromNothing) was begun at HLC time
// base.timestamp over a dead or missing register: it counts over any tombstone or absent value
// older than its start, and a newer SET or DEL resets it. Such a start, not the version of a
// register the writer read, is what keeps increments made after a collected tombstone: a replica
// that has not yet collected the tombstone holds an older register, which the count outlives.
// Entries are identified by (actor, base): a writer that begins a new count from nothing keeps
// its earlier one, which may still count where a read did not see it.
struct CounterEntry {
  uint64_t actor = 0;  // writer node id << 32 | the writer storage's incarnation
  Version base;        // the value register version these totals count over (or the start)
  uint64_t inc = 0;    // everything this writer added over `base`
  uint64_t dec = 0;    // everything it subtracted
  bool from_nothing() const { return base.node_id == kCountFromNothing; }
  friend bool operator==(const CounterEntry&, const CounterEntry&) = default;
};

// The base of a count from nothing begun at HLC time `start`.
inline Version CountFromNothing(uint64_t start) { return {start, kCountFromNothing}; }
// The order entries are kept in (and their identity): actor, then base.
inline bool CounterKeyLess(const CounterEntry& a, const CounterEntry& b) {
  return a.actor != b.actor ? a.actor < b.actor : a.base < b.base;
}
// True when no later value register can make `c` count again: a register newer than its base
// (or, from nothing, one not older than its start). Merge drops such entries.
inline bool CounterSuperseded(const CounterEntry& c, Version value_register) {
  return c.from_nothing() ? value_register.timestamp >= c.base.timestamp : c.base < value_register;
}
// True when `c` counts over a value register of version `v` (`dead`: a tombstone or no value).
inline bool CounterCountsOver(const CounterEntry& c, Version v, bool dead) {
  return c.from_nothing() ? dead && v.timestamp < c.base.timestamp : c.base == v;
}

// One field of a hash (design.md "Hashes"): a last-write-wins register of its own. A field counts
// only while it is newer than the record's value register: a SET or DEL with a newer version
// resets the hash, as it resets a counter. A deleted field (HDEL) stays as a field tombstone, so
// that an older HSET of it arriving later cannot bring it back.
struct HashField {
  std::string name;
  Version version;
  bool deleted = false;
  std::string value;  // empty when deleted
  friend bool operator==(const HashField&, const HashField&) = default;
};

// The field kept when two writes of one field meet: the newer version, then (for inputs one write
// never produces) deleted before live, then the smaller value, so Merge stays a join.
inline bool HashFieldLess(const HashField& a, const HashField& b) {
  if (a.version != b.version) return a.version < b.version;
  if (a.deleted != b.deleted) return b.deleted;
  return a.value < b.value;
}

// One node's adds of one member of a set, and the removes that observed them: an add-wins
// observed-remove set (design.md "Sets"). An SADD through node A stamps the member's entry for A
// with A's HLC time (`add`); an SREM writes, for every entry it read live, the add time it saw
// (`removed`). The member is in the set while some entry has an add newer than the removes that
// saw it, so an SADD that a concurrent SREM did not observe survives it. Replicas merge an entry
// by taking the later add, and the remove that saw the later add (a join); an entry older than
// the value register is dropped (a SET or DEL resets a set, as it resets a hash). Removed entries
// stay, so that an older add arriving later cannot bring the member back, until the whole record
// is collected.
struct SetMember {
  std::string name;
  uint32_t actor = 0;       // the node whose adds this entry holds
  uint64_t add = 0;         // the HLC time of its latest add (> 0)
  uint64_t removed = 0;     // the latest of its add times a remove observed (0: none)
  uint64_t removed_at = 0;  // the HLC time of the remove that saw `removed` (0: none): ages the
                            // record
  bool live() const { return add > removed; }
  Version add_version() const { return {add, actor}; }
  friend bool operator==(const SetMember&, const SetMember&) = default;
};

// True when `m` records a remove of an add older than the value register `over`: such an add
// was reset by the SET or DEL that wrote `over` anyway, so Merge forgets the remove.
inline bool SetRemoveReset(const SetMember& m, Version over) {
  return m.removed != 0 && Version{m.removed, m.actor} < over;
}

// The order set entries are kept in (and their identity): member bytes, then actor.
inline bool SetMemberKeyLess(const SetMember& a, const SetMember& b) {
  return a.name != b.name ? a.name < b.name : a.actor < b.actor;
}

// What a live record holds besides a string: the newer write decides when a hash field and a set
// member are both live (an HSET and an SADD of a new key through two nodes at once), as a SET
// over either would.
enum class Collection : uint8_t { kNone, kHash, kSet };

// A decoded envelope that owns its value.
//
// Aggregate initialisation with the first four members is a plain write (format 1): the expiry
// register is then implied (same version as the value, no expiry). SetExpiry makes it explicit.
struct Envelope {
  uint64_t timestamp = 0;  // value register version
  uint32_t node_id = 0;
  bool tombstone = false;
  std::string value;  // empty when tombstone or value_absent
  // The value register holds nothing (an EXPIRE or PERSIST reached a replica with no record);
  // its version is then (0,0).
  bool value_absent = false;
  // False: the expiry register is implied by the value register (the three fields below are
  // ignored). True: they are the expiry register; version (0,0) = "no opinion" (KEEPTTL).
  bool explicit_expiry = false;
  uint64_t expiry_timestamp = 0;
  uint32_t expiry_node_id = 0;
  uint64_t expiry_at_ms = 0;  // Unix ms, 0 = no expiry
  // Counter entries, ascending by (actor, base) (empty: not a counter). Merge keeps only those
  // a later value register could still let count (CounterSuperseded).
  std::vector<CounterEntry> counter = {};
  // Hash fields, ascending by name (empty: not a hash). Merge keeps only those newer than the
  // value register.
  std::vector<HashField> hash = {};
  // Set entries, ascending by (member, actor) (empty: not a set). Merge keeps only those whose
  // add is newer than the value register.
  std::vector<SetMember> set = {};

  Version version() const { return {timestamp, node_id}; }
  Version expiry_version() const {
    return explicit_expiry ? Version{expiry_timestamp, expiry_node_id} : version();
  }
  uint64_t expires_at_ms() const { return explicit_expiry ? expiry_at_ms : 0; }
  void SetExpiry(Version v, uint64_t expires_at_ms) {
    explicit_expiry = true;
    expiry_timestamp = v.timestamp;
    expiry_node_id = v.node_id;
    expiry_at_ms = expires_at_ms;
  }
  // The newest version in the record, of its two registers and its hash fields (for tombstone GC
  // and clock updates).
  Version newest_version() const {
    Version v = std::max(version(), expiry_version());
    for (const HashField& f : hash) v = std::max(v, f.version);
    for (const SetMember& m : set) v = std::max({v, m.add_version(), Version{m.removed_at, 0}});
    return v;
  }
  // True when the value register holds a value (not a tombstone, not absent).
  bool has_value() const { return !tombstone && !value_absent; }
  // True when counter entries count over the value register (a counter, even over a tombstone
  // or an absent value: INCR of a missing key).
  bool counter_active() const {
    return std::any_of(counter.begin(), counter.end(),
                       [&](const CounterEntry& c) { return Counts(c); });
  }
  // `c` counts over this record's value register (its expiry aside).
  bool Counts(const CounterEntry& c) const { return CounterCountsOver(c, version(), !has_value()); }
  bool ExpiredAt(uint64_t now_ms) const {
    return expires_at_ms() != 0 && expires_at_ms() <= now_ms;
  }
  // The tombstone an expiry amounts to: above both registers and the expiry instant, node 0, so
  // every coordinator that reads this expired record computes the same one.
  Version ExpiryDeath() const {
    return {std::max({timestamp, expiry_version().timestamp, expires_at_ms() << 16}) + 1, 0};
  }
  // `c` counts in what the record reads as at `now_ms`: once the record expired, only counts
  // from nothing begun after its ExpiryDeath (they were made over the expired key's absence).
  bool CountsAt(const CounterEntry& c, uint64_t now_ms) const {
    if (!ExpiredAt(now_ms)) return Counts(c);
    return c.from_nothing() && c.base.timestamp > ExpiryDeath().timestamp;
  }
  // True when a field of a hash is live (not deleted). The record is then a hash: its fields are
  // all newer than its value register, which they shadow (the newest write decides the type).
  bool hash_live() const {
    return std::any_of(hash.begin(), hash.end(), [](const HashField& f) { return !f.deleted; });
  }
  // True when a member of a set is live: the record is then a set (as hash_live).
  bool set_live() const {
    return std::any_of(set.begin(), set.end(), [](const SetMember& m) { return m.live(); });
  }
  // Which collection a live record holds (kNone: a string or a counter).
  Collection collection() const;
  // The record reads as a live value (or counter, hash or set) at wall-clock `now_ms`.
  bool LiveAt(uint64_t now_ms) const {
    if (!ExpiredAt(now_ms)) return has_value() || counter_active() || hash_live() || set_live();
    return std::any_of(counter.begin(), counter.end(),
                       [&](const CounterEntry& c) { return CountsAt(c, now_ms); });
  }
  // The expiry a read at `now_ms` reports: none for a counter that outlived an expired register.
  uint64_t ExpiresAtMsAt(uint64_t now_ms) const { return ExpiredAt(now_ms) ? 0 : expires_at_ms(); }
  // Both registers written by one plain write: the format-1 shape.
  bool IsFormat1() const {
    return !value_absent && expiry_version() == version() && expires_at_ms() == 0 &&
           counter.empty() && hash.empty() && set.empty();
  }

  // A write of both registers with one version: a value (or tombstone) and its expiry.
  static Envelope Plain(Version version, bool tombstone, std::string value,
                        uint64_t expires_at_ms = 0) {
    Envelope e{version.timestamp, version.node_id, tombstone, std::move(value)};
    if (expires_at_ms != 0) e.SetExpiry(version, expires_at_ms);
    return e;
  }
  // A write of the value register only (SET ... KEEPTTL).
  static Envelope ValueOnly(Version version, std::string value) {
    Envelope e{version.timestamp, version.node_id, false, std::move(value)};
    e.SetExpiry(Version{}, 0);
    return e;
  }
  // A write of the expiry register only (EXPIRE, PERSIST): expires_at_ms 0 = persist.
  static Envelope ExpiryOnly(Version version, uint64_t expires_at_ms) {
    Envelope e;
    e.value_absent = true;
    e.SetExpiry(version, expires_at_ms);
    return e;
  }

  // Equal registers (an implied expiry register equals the same explicit one).
  friend bool operator==(const Envelope& a, const Envelope& b) {
    return a.version() == b.version() && a.tombstone == b.tombstone &&
           a.value_absent == b.value_absent && a.value == b.value &&
           a.expiry_version() == b.expiry_version() && a.expires_at_ms() == b.expires_at_ms() &&
           a.counter == b.counter && a.hash == b.hash && a.set == b.set;
  }
};

// A decoded envelope whose value views into the encoded bytes (expiry register always explicit).
struct EnvelopeView {
  uint64_t timestamp = 0;
  uint32_t node_id = 0;
  bool tombstone = false;
  std::string_view value;
  bool value_absent = false;
  uint64_t expiry_timestamp = 0;
  uint32_t expiry_node_id = 0;
  uint64_t expires_at_ms = 0;
  // Format 3: the encoded counter section (entries only, validated by DecodeEnvelope), whether
  // one of its entries counts over the value register, and the latest start of its counts from
  // nothing (0: none).
  std::string_view counter_bytes;
  bool counter_active = false;
  uint64_t counter_latest_start = 0;
  // Format 4: the encoded hash section (validated), whether a field is live, and the newest
  // field version (what the tombstone GC ages a record of deleted fields by).
  std::string_view hash_bytes;
  bool hash_live = false;
  Version hash_newest;
  // Format 5: the encoded set section (validated), whether a member is live, and the newest add
  // or remove time in it (for the tombstone GC, as hash_newest).
  std::string_view set_bytes;
  bool set_live = false;
  Version set_newest;

  Version version() const { return {timestamp, node_id}; }
  Version expiry_version() const { return {expiry_timestamp, expiry_node_id}; }
  Version newest_version() const {
    return std::max({version(), expiry_version(), hash_newest, set_newest});
  }
  // As Envelope::ExpiryDeath.
  Version ExpiryDeath() const {
    return {std::max({timestamp, expiry_timestamp, expires_at_ms << 16}) + 1, 0};
  }
  // A count from nothing begun after the record's expiry instant keeps it live past it.
  bool CounterOutlivesExpiry() const { return counter_latest_start > ExpiryDeath().timestamp; }
  // Live as Envelope::LiveAt.
  bool LiveAt(uint64_t now_ms) const {
    if (expires_at_ms == 0 || expires_at_ms > now_ms) {
      return (!tombstone && !value_absent) || counter_active || hash_live || set_live;
    }
    return CounterOutlivesExpiry();
  }
  // Format-1 shapes come back with an implied expiry register.
  Envelope ToEnvelope() const;
};

// Appends the format-1 encoding of a plain write to *out. REQUIRES: value is empty if tombstone.
void EncodeEnvelope(Version version, bool tombstone, std::string_view value, std::string* out);
// Appends the encoding of `envelope` (format 1 when IsFormat1(), else format 2).
// REQUIRES: ValidateEnvelopeShape(envelope).ok().
void EncodeEnvelope(const Envelope& envelope, std::string* out);
std::string EncodeEnvelope(const Envelope& envelope);

// InvalidArgument when the registers contradict each other: a tombstone or absent value carrying
// bytes, both tombstone and absent, an absent value with a non-zero version, or counter entries
// out of actor order, repeated, more than kMaxCounterWriters, or over an older value register.
[[nodiscard]] Status ValidateEnvelopeShape(const Envelope& envelope);

// Parses `encoded`. NotSupported for an unknown format byte; Corruption for truncation, reserved
// flags or a tombstone carrying value bytes. On success view->value points into `encoded`.
[[nodiscard]] Status DecodeEnvelope(std::string_view encoded, EnvelopeView* view);

// The join of two envelopes of one key: per register, the one with the higher version; for an
// identical version (which one write never produces with different contents) the larger content;
// counter entries per actor, the newer base or else the larger totals, keeping only those whose
// base is not older than the merged value register; hash fields per name, the newer; set entries
// per (member, actor), the later add and the later remove. So Merge is commutative, associative and
// idempotent whatever it is given.
Envelope Merge(const Envelope& a, const Envelope& b);

// How merging `incoming` into `stored` went.
enum class MergeOutcome : uint8_t {
  kChanged,     // the merge differs from `stored`
  kSuperseded,  // `stored` already wins both registers, one strictly; nothing changes
  kDuplicate,   // every register `incoming` writes is stored at the same version
};
MergeOutcome MergeInto(Envelope* stored, const Envelope& incoming);

}  // namespace shardkv::storage
