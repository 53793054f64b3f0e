#include "storage/value_envelope.h"

#include <optional>
#include <utility>

namespace shardkv::storage {
namespace {

void AppendFixed64LE(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) {
    buf[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->append(buf, sizeof(buf));
}

uint64_t ReadFixed64LE(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void AppendVarint32(std::string* out, uint32_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Returns the number of bytes consumed, or 0 if the varint is truncated or longer than 5 bytes.
size_t ReadVarint32(std::string_view in, uint32_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < in.size() && i < 5; ++i) {
    const auto byte = static_cast<unsigned char>(in[i]);
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      if (result > UINT32_MAX) return 0;
      *v = static_cast<uint32_t>(result);
      return i + 1;
    }
  }
  return 0;
}

void AppendVarint64(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Returns the number of bytes consumed, or 0 if the varint is truncated or overlong.
size_t ReadVarint64(std::string_view in, uint64_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < in.size() && i < 10; ++i) {
    const auto byte = static_cast<unsigned char>(in[i]);
    if (i == 9 && byte > 1) return 0;
    result |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = result;
      return i + 1;
    }
  }
  return 0;
}

// Parses `count` counter entries from the front of `in`; the bytes consumed, or 0 if malformed
// (truncated, out of (actor, base) order or repeated). `out` may be null (validation only);
// `view` (optional) gets counter_active (an entry counts over its value register) and
// counter_latest_start.
size_t ReadCounterEntries(std::string_view in, uint32_t count, std::vector<CounterEntry>* out,
                          EnvelopeView* view) {
  size_t pos = 0;
  CounterEntry last;
  for (uint32_t i = 0; i < count; ++i) {
    CounterEntry c;
    if (in.size() < pos + 16) return 0;
    c.actor = ReadFixed64LE(in.data() + pos);
    c.base.timestamp = ReadFixed64LE(in.data() + pos + 8);
    pos += 16;
    size_t n = ReadVarint32(in.substr(pos), &c.base.node_id);
    if (n == 0) return 0;
    pos += n;
    if ((n = ReadVarint64(in.substr(pos), &c.inc)) == 0) return 0;
    pos += n;
    if ((n = ReadVarint64(in.substr(pos), &c.dec)) == 0) return 0;
    pos += n;
    if (i > 0 && !CounterKeyLess(last, c)) return 0;
    last = c;
    if (view != nullptr) {
      if (CounterCountsOver(c, view->version(), view->tombstone || view->value_absent)) {
        view->counter_active = true;
      }
      if (c.from_nothing()) {
        view->counter_latest_start = std::max(view->counter_latest_start, c.base.timestamp);
      }
    }
    if (out != nullptr) out->push_back(c);
  }
  return pos;
}

// Parses `count` hash fields from the front of `in`; the bytes consumed, or 0 if malformed
// (truncated, out of name order or repeated, reserved flags, a deleted field with a value). `out`
// may be null; `view` (optional) gets hash_live and hash_newest.
size_t ReadHashFields(std::string_view in, uint32_t count, std::vector<HashField>* out,
                      EnvelopeView* view) {
  size_t pos = 0;
  std::string_view last;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0;
    size_t n = ReadVarint32(in.substr(pos), &len);
    if (n == 0 || in.size() - pos - n < len) return 0;
    pos += n;
    const std::string_view name = in.substr(pos, len);
    pos += len;
    if (i > 0 && !(last < name)) return 0;
    last = name;
    if (in.size() < pos + 8) return 0;
    Version v{ReadFixed64LE(in.data() + pos), 0};
    pos += 8;
    if ((n = ReadVarint32(in.substr(pos), &v.node_id)) == 0) return 0;
    pos += n;
    if (in.size() < pos + 1) return 0;
    const auto flags = static_cast<uint8_t>(in[pos++]);
    if ((flags & ~1u) != 0) return 0;
    if ((n = ReadVarint32(in.substr(pos), &len)) == 0 || in.size() - pos - n < len) return 0;
    pos += n;
    const bool deleted = (flags & 1u) != 0;
    if (deleted && len != 0) return 0;
    if (view != nullptr) {
      if (!deleted) view->hash_live = true;
      view->hash_newest = std::max(view->hash_newest, v);
    }
    if (out != nullptr) {
      out->push_back(HashField{std::string(name), v, deleted, std::string(in.substr(pos, len))});
    }
    pos += len;
  }
  return pos;
}

// Parses `count` set entries from the front of `in`; the bytes consumed, or 0 if malformed
// (truncated, out of (member, actor) order or repeated, an add of 0, a remove above the add, or
// a remove time without a removed add or the reverse). `out` may be null; `view` (optional) gets
// set_live and set_newest.
size_t ReadSetMembers(std::string_view in, uint32_t count, std::vector<SetMember>* out,
                      EnvelopeView* view) {
  size_t pos = 0;
  std::string_view last_name;
  uint32_t last_actor = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t len = 0;
    size_t n = ReadVarint32(in.substr(pos), &len);
    if (n == 0 || in.size() - pos - n < len) return 0;
    pos += n;
    const std::string_view name = in.substr(pos, len);
    pos += len;
    uint32_t actor = 0;
    if ((n = ReadVarint32(in.substr(pos), &actor)) == 0) return 0;
    pos += n;
    if (i > 0 && !(last_name < name || (last_name == name && last_actor < actor))) return 0;
    last_name = name;
    last_actor = actor;
    if (in.size() < pos + 24) return 0;
    const uint64_t add = ReadFixed64LE(in.data() + pos);
    const uint64_t removed = ReadFixed64LE(in.data() + pos + 8);
    const uint64_t removed_at = ReadFixed64LE(in.data() + pos + 16);
    pos += 24;
    if (add == 0 || removed > add || (removed == 0) != (removed_at == 0)) return 0;
    if (view != nullptr) {
      if (add > removed) view->set_live = true;
      view->set_newest = std::max({view->set_newest, Version{add, actor}, Version{removed_at, 0}});
    }
    if (out != nullptr)
      out->push_back(SetMember{std::string(name), actor, add, removed, removed_at});
  }
  return pos;
}

}  // namespace

Collection Envelope::collection() const {
  // The newest live write of each kind; a kind with none is absent.
  std::optional<Version> field;
  std::optional<Version> member;
  for (const HashField& f : hash) {
    if (!f.deleted && (!field || *field < f.version)) field = f.version;
  }
  for (const SetMember& m : set) {
    if (m.live() && (!member || *member < m.add_version())) member = m.add_version();
  }
  if (field && (!member || *member < *field)) return Collection::kHash;
  return member ? Collection::kSet : Collection::kNone;
}

void EncodeEnvelope(Version version, bool tombstone, std::string_view value, std::string* out) {
  out->reserve(out->size() + kEnvelopeMinBytes + 4 + value.size());
  out->push_back(static_cast<char>(kEnvelopeFormatV1));
  out->push_back(static_cast<char>(tombstone ? kEnvelopeFlagTombstone : 0));
  AppendFixed64LE(out, version.timestamp);
  AppendVarint32(out, version.node_id);
  if (!tombstone) out->append(value);
}

void EncodeEnvelope(const Envelope& envelope, std::string* out) {
  if (envelope.IsFormat1()) {
    EncodeEnvelope(envelope.version(), envelope.tombstone, envelope.value, out);
    return;
  }
  out->reserve(out->size() + kEnvelopeMinBytes + 8 + 5 + 8 + 4 + envelope.value.size());
  const uint8_t format = !envelope.set.empty()       ? kEnvelopeFormatV5
                         : !envelope.hash.empty()    ? kEnvelopeFormatV4
                         : !envelope.counter.empty() ? kEnvelopeFormatV3
                                                     : kEnvelopeFormatV2;
  out->push_back(static_cast<char>(format));
  uint8_t flags = 0;
  if (envelope.tombstone) flags |= kEnvelopeFlagTombstone;
  if (envelope.value_absent) flags |= kEnvelopeFlagValueAbsent;
  out->push_back(static_cast<char>(flags));
  AppendFixed64LE(out, envelope.timestamp);
  AppendVarint32(out, envelope.node_id);
  const Version expiry = envelope.expiry_version();
  AppendFixed64LE(out, expiry.timestamp);
  AppendVarint32(out, expiry.node_id);
  AppendFixed64LE(out, envelope.expires_at_ms());
  if (format >= kEnvelopeFormatV3) {
    AppendVarint32(out, static_cast<uint32_t>(envelope.counter.size()));
    for (const CounterEntry& c : envelope.counter) {
      AppendFixed64LE(out, c.actor);
      AppendFixed64LE(out, c.base.timestamp);
      AppendVarint32(out, c.base.node_id);
      AppendVarint64(out, c.inc);
      AppendVarint64(out, c.dec);
    }
  }
  if (format >= kEnvelopeFormatV4) {
    AppendVarint32(out, static_cast<uint32_t>(envelope.hash.size()));
    for (const HashField& f : envelope.hash) {
      AppendVarint32(out, static_cast<uint32_t>(f.name.size()));
      out->append(f.name);
      AppendFixed64LE(out, f.version.timestamp);
      AppendVarint32(out, f.version.node_id);
      out->push_back(static_cast<char>(f.deleted ? 1 : 0));
      AppendVarint32(out, static_cast<uint32_t>(f.value.size()));
      out->append(f.value);
    }
  }
  if (format == kEnvelopeFormatV5) {
    AppendVarint32(out, static_cast<uint32_t>(envelope.set.size()));
    for (const SetMember& m : envelope.set) {
      AppendVarint32(out, static_cast<uint32_t>(m.name.size()));
      out->append(m.name);
      AppendVarint32(out, m.actor);
      AppendFixed64LE(out, m.add);
      AppendFixed64LE(out, m.removed);
      AppendFixed64LE(out, m.removed_at);
    }
  }
  if (envelope.has_value()) out->append(envelope.value);
}

std::string EncodeEnvelope(const Envelope& envelope) {
  std::string out;
  EncodeEnvelope(envelope, &out);
  return out;
}

Status ValidateEnvelopeShape(const Envelope& envelope) {
  if (envelope.tombstone && envelope.value_absent) {
    return Status::InvalidArgument("an envelope cannot be both a tombstone and value-absent");
  }
  if (!envelope.has_value() && !envelope.value.empty()) {
    return Status::InvalidArgument(envelope.tombstone ? "a tombstone cannot carry a value"
                                                      : "an absent value cannot carry bytes");
  }
  if (envelope.value_absent && envelope.version() != Version{}) {
    return Status::InvalidArgument("an absent value must have version (0, 0)");
  }
  if (envelope.counter.size() > kMaxCounterWriters) {
    return Status::InvalidArgument("a counter has " + std::to_string(envelope.counter.size()) +
                                   " writers; at most " + std::to_string(kMaxCounterWriters));
  }
  for (size_t i = 0; i < envelope.counter.size(); ++i) {
    if (i > 0 && !CounterKeyLess(envelope.counter[i - 1], envelope.counter[i])) {
      return Status::InvalidArgument("counter entries out of (writer, base) order or repeated");
    }
    // Merge drops such an entry; stored as given, the record would never equal its own merge.
    if (CounterSuperseded(envelope.counter[i], envelope.version())) {
      return Status::InvalidArgument("a counter entry counts over a value older than the record's");
    }
  }
  if (envelope.hash.size() > kMaxHashFields) {
    return Status::InvalidArgument("a hash has " + std::to_string(envelope.hash.size()) +
                                   " fields; at most " + std::to_string(kMaxHashFields));
  }
  for (size_t i = 0; i < envelope.hash.size(); ++i) {
    const HashField& f = envelope.hash[i];
    if (i > 0 && !(envelope.hash[i - 1].name < f.name)) {
      return Status::InvalidArgument("hash fields out of name order or repeated");
    }
    if (f.deleted && !f.value.empty()) {
      return Status::InvalidArgument("a deleted hash field cannot carry a value");
    }
    // Merge drops such a field; stored as given, the record would never equal its own merge.
    if (f.version < envelope.version()) {
      return Status::InvalidArgument("a hash field older than the record's value");
    }
  }
  if (envelope.set.size() > kMaxSetEntries) {
    return Status::InvalidArgument("a set has " + std::to_string(envelope.set.size()) +
                                   " entries; at most " + std::to_string(kMaxSetEntries));
  }
  for (size_t i = 0; i < envelope.set.size(); ++i) {
    const SetMember& m = envelope.set[i];
    if (i > 0 && !SetMemberKeyLess(envelope.set[i - 1], m)) {
      return Status::InvalidArgument("set entries out of (member, node) order or repeated");
    }
    if (m.add == 0 || m.removed > m.add || (m.removed == 0) != (m.removed_at == 0)) {
      return Status::InvalidArgument("a set entry's add and remove times contradict each other");
    }
    // Merge drops such an entry (as a hash field older than the record's value), and forgets
    // such a remove: stored as given, the record would never equal its own merge.
    if (m.add_version() < envelope.version()) {
      return Status::InvalidArgument("a set entry older than the record's value");
    }
    if (SetRemoveReset(m, envelope.version())) {
      return Status::InvalidArgument("a set entry's remove older than the record's value");
    }
  }
  return Status::OK();
}

namespace {

Status Truncated(std::string_view encoded) {
  return Status::Corruption("value envelope truncated: " + std::to_string(encoded.size()) +
                            " bytes");
}

}  // namespace

Status DecodeEnvelope(std::string_view encoded, EnvelopeView* view) {
  if (encoded.empty()) return Status::Corruption("empty value envelope");
  const auto format = static_cast<uint8_t>(encoded[0]);
  if (format < kEnvelopeFormatV1 || format > kEnvelopeFormatV5) {
    return Status::NotSupported("value envelope format " + std::to_string(format) +
                                " is unknown to this build (it reads formats 1 to 5)");
  }
  if (encoded.size() < kEnvelopeMinBytes) return Truncated(encoded);
  const auto flags = static_cast<uint8_t>(encoded[1]);
  const uint8_t known = format == kEnvelopeFormatV1
                            ? kEnvelopeFlagTombstone
                            : (kEnvelopeFlagTombstone | kEnvelopeFlagValueAbsent);
  if ((flags & ~known) != 0) {
    return Status::Corruption("value envelope has reserved flag bits set: " +
                              std::to_string(flags));
  }
  view->tombstone = (flags & kEnvelopeFlagTombstone) != 0;
  view->value_absent = (flags & kEnvelopeFlagValueAbsent) != 0;
  if (view->tombstone && view->value_absent) {
    return Status::Corruption("value envelope is both a tombstone and value-absent");
  }
  view->timestamp = ReadFixed64LE(encoded.data() + 2);
  size_t n = ReadVarint32(encoded.substr(10), &view->node_id);
  if (n == 0) return Status::Corruption("value envelope has a malformed node id");
  size_t pos = 10 + n;
  if (format == kEnvelopeFormatV1) {
    view->expiry_timestamp = view->timestamp;
    view->expiry_node_id = view->node_id;
    view->expires_at_ms = 0;
  } else {
    if (encoded.size() < pos + 8 + 1 + 8) return Truncated(encoded);
    view->expiry_timestamp = ReadFixed64LE(encoded.data() + pos);
    pos += 8;
    n = ReadVarint32(encoded.substr(pos), &view->expiry_node_id);
    if (n == 0) return Status::Corruption("value envelope has a malformed expiry node id");
    pos += n;
    if (encoded.size() < pos + 8) return Truncated(encoded);
    view->expires_at_ms = ReadFixed64LE(encoded.data() + pos);
    pos += 8;
  }
  view->counter_bytes = {};
  view->counter_active = false;
  view->counter_latest_start = 0;
  view->hash_bytes = {};
  view->hash_live = false;
  view->hash_newest = {};
  view->set_bytes = {};
  view->set_live = false;
  view->set_newest = {};
  if (format >= kEnvelopeFormatV3) {
    uint32_t count = 0;
    n = ReadVarint32(encoded.substr(pos), &count);
    // Format 4 always has the count, 0 when the record has no entries.
    if (n == 0 || (count == 0 && format == kEnvelopeFormatV3) || count > kMaxCounterWriters) {
      return Status::Corruption("value envelope has a malformed counter entry count");
    }
    pos += n;
    const size_t used =
        count == 0 ? 0 : ReadCounterEntries(encoded.substr(pos), count, nullptr, view);
    if (count != 0 && used == 0) {
      return Status::Corruption("value envelope has malformed counter entries");
    }
    view->counter_bytes = count == 0 ? std::string_view() : encoded.substr(pos - n, n + used);
    pos += used;
  }
  if (format >= kEnvelopeFormatV4) {
    uint32_t count = 0;
    n = ReadVarint32(encoded.substr(pos), &count);
    // Format 5 always has the count, 0 when the record has no fields.
    if (n == 0 || (count == 0 && format == kEnvelopeFormatV4) || count > kMaxHashFields) {
      return Status::Corruption("value envelope has a malformed hash field count");
    }
    pos += n;
    const size_t used = count == 0 ? 0 : ReadHashFields(encoded.substr(pos), count, nullptr, view);
    if (count != 0 && used == 0) {
      return Status::Corruption("value envelope has malformed hash fields");
    }
    view->hash_bytes = count == 0 ? std::string_view() : encoded.substr(pos - n, n + used);
    pos += used;
  }
  if (format == kEnvelopeFormatV5) {
    uint32_t count = 0;
    n = ReadVarint32(encoded.substr(pos), &count);
    if (n == 0 || count == 0 || count > kMaxSetEntries) {
      return Status::Corruption("value envelope has a malformed set entry count");
    }
    pos += n;
    const size_t used = ReadSetMembers(encoded.substr(pos), count, nullptr, view);
    if (used == 0) return Status::Corruption("value envelope has malformed set entries");
    view->set_bytes = encoded.substr(pos - n, n + used);
    pos += used;
  }
  view->value = encoded.substr(pos);
  if (view->tombstone && !view->value.empty()) {
    return Status::Corruption("tombstone envelope carries value bytes");
  }
  if (view->value_absent && !view->value.empty()) {
    return Status::Corruption("value-absent envelope carries value bytes");
  }
  return Status::OK();
}

Envelope EnvelopeView::ToEnvelope() const {
  Envelope e{timestamp, node_id, tombstone, std::string(value)};
  e.value_absent = value_absent;
  if (value_absent || expiry_version() != version() || expires_at_ms != 0) {
    e.SetExpiry(expiry_version(), expires_at_ms);
  }
  if (!counter_bytes.empty()) {
    uint32_t count = 0;
    const size_t n = ReadVarint32(counter_bytes, &count);
    e.counter.reserve(count);
    // Validated by DecodeEnvelope, which made this view.
    (void)ReadCounterEntries(counter_bytes.substr(n), count, &e.counter, nullptr);
  }
  if (!hash_bytes.empty()) {
    uint32_t count = 0;
    const size_t n = ReadVarint32(hash_bytes, &count);
    e.hash.reserve(count);
    (void)ReadHashFields(hash_bytes.substr(n), count, &e.hash, nullptr);
  }
  if (!set_bytes.empty()) {
    uint32_t count = 0;
    const size_t n = ReadVarint32(set_bytes, &count);
    e.set.reserve(count);
    (void)ReadSetMembers(set_bytes.substr(n), count, &e.set, nullptr);
  }
  return e;
}

namespace {

// The value register's content order for identical versions: absent < tombstone < value, then
// the bytes. Only reached for inputs one write never produces; it keeps Merge a join.
int ValueContentRank(const Envelope& e) { return e.value_absent ? 0 : (e.tombstone ? 1 : 2); }

bool ValueRegisterLess(const Envelope& a, const Envelope& b) {
  if (a.version() != b.version()) return a.version() < b.version();
  if (ValueContentRank(a) != ValueContentRank(b)) return ValueContentRank(a) < ValueContentRank(b);
  return a.value < b.value;
}

bool ExpiryRegisterLess(const Envelope& a, const Envelope& b) {
  if (a.expiry_version() != b.expiry_version()) return a.expiry_version() < b.expiry_version();
  return a.expires_at_ms() < b.expires_at_ms();
}

// The join the three kinds of entries share: `a` and `b` ascending by `less` (their identity),
// an entry in one list only taken as it is, two with one identity joined by `join`; each result
// goes through `keep`, which may rewrite it and returns false to drop it.
template <typename T, typename Less, typename Join, typename Keep>
std::vector<T> MergeSorted(const std::vector<T>& a, const std::vector<T>& b, Less less, Join join,
                           Keep keep) {
  std::vector<T> out;
  if (a.empty() && b.empty()) return out;
  out.reserve(std::max(a.size(), b.size()));
  auto take = [&](T x) {
    if (keep(x)) out.push_back(std::move(x));
  };
  size_t i = 0;
  size_t j = 0;
  while (i < a.size() || j < b.size()) {
    if (j == b.size() || (i < a.size() && less(a[i], b[j]))) {
      take(a[i++]);
    } else if (i == a.size() || less(b[j], a[i])) {
      take(b[j++]);
    } else {
      take(join(a[i], b[j]));
      ++i;
      ++j;
    }
  }
  return out;
}

// Counter entries joined per (actor, base), by maximum, dropping the entries no later register
// can let count: a newer SET or DEL reset the counter they counted in (CounterSuperseded).
std::vector<CounterEntry> MergeCounters(const std::vector<CounterEntry>& a,
                                        const std::vector<CounterEntry>& b, Version over) {
  return MergeSorted(
      a, b, CounterKeyLess,
      [](const CounterEntry& x, const CounterEntry& y) {
        return CounterEntry{x.actor, x.base, std::max(x.inc, y.inc), std::max(x.dec, y.dec)};
      },
      [&](const CounterEntry& c) { return !CounterSuperseded(c, over); });
}

// Hash fields joined per name, the newer write of a field each (its tombstone included),
// dropping the fields older than `over`: a newer SET or DEL reset the hash.
std::vector<HashField> MergeHash(const std::vector<HashField>& a, const std::vector<HashField>& b,
                                 Version over) {
  return MergeSorted(
      a, b, [](const HashField& x, const HashField& y) { return x.name < y.name; },
      [](const HashField& x, const HashField& y) { return HashFieldLess(x, y) ? y : x; },
      [&](const HashField& f) { return !(f.version < over); });
}

// Set entries joined per (member, actor): the later add, and the remove that saw the later add
// (then the later remove), dropping the entries whose add is older than `over` (a newer SET or
// DEL reset the set) and forgetting removes of adds older than it, which count for nothing
// (SetRemoveReset). Forgetting them, rather than keeping them, is what keeps the merge
// associative: an entry dropped on one merge path would otherwise carry its remove into the
// result on another.
std::vector<SetMember> MergeSet(const std::vector<SetMember>& a, const std::vector<SetMember>& b,
                                Version over) {
  return MergeSorted(
      a, b, SetMemberKeyLess,
      [](const SetMember& x, const SetMember& y) {
        const bool x_removes =
            std::pair(x.removed, x.removed_at) > std::pair(y.removed, y.removed_at);
        const SetMember& r = x_removes ? x : y;
        return SetMember{x.name, x.actor, std::max(x.add, y.add), r.removed, r.removed_at};
      },
      [&](SetMember& m) {
        if (m.add_version() < over) return false;
        if (SetRemoveReset(m, over)) m.removed = m.removed_at = 0;
        return true;
      });
}

}  // namespace

Envelope Merge(const Envelope& a, const Envelope& b) {
  const Envelope& value_winner = ValueRegisterLess(a, b) ? b : a;
  const Envelope& expiry_winner = ExpiryRegisterLess(a, b) ? b : a;
  Envelope out{value_winner.timestamp, value_winner.node_id, value_winner.tombstone,
               value_winner.value};
  out.value_absent = value_winner.value_absent;
  // Keep the canonical form: an implied expiry register whenever the shape is format 1.
  if (out.value_absent || expiry_winner.expiry_version() != out.version() ||
      expiry_winner.expires_at_ms() != 0) {
    out.SetExpiry(expiry_winner.expiry_version(), expiry_winner.expires_at_ms());
  }
  out.counter = MergeCounters(a.counter, b.counter, out.version());
  out.hash = MergeHash(a.hash, b.hash, out.version());
  out.set = MergeSet(a.set, b.set, out.version());
  return out;
}

MergeOutcome MergeInto(Envelope* stored, const Envelope& incoming) {
  if (*stored == incoming) return MergeOutcome::kDuplicate;
  Envelope merged = Merge(*stored, incoming);
  if (merged == *stored) {
    // Every register the write has an opinion on ((0,0) = none) is stored at the same version:
    // the same write seen again (a replayed EXPIRE, a re-streamed value), not an older one.
    const bool same_value =
        incoming.version() == Version{} || incoming.version() == stored->version();
    const bool same_expiry = incoming.expiry_version() == Version{} ||
                             incoming.expiry_version() == stored->expiry_version();
    return same_value && same_expiry ? MergeOutcome::kDuplicate : MergeOutcome::kSuperseded;
  }
  *stored = std::move(merged);
  return MergeOutcome::kChanged;
}

}  // namespace shardkv::storage
