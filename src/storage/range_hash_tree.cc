#include "storage/range_hash_tree.h"

#include <xxhash.h>

#include <algorithm>
#include <string>

#include "storage/key_codec.h"

namespace shardkv::storage {
namespace {

void AppendLe64(std::string* out, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; ++i) buf[i] = static_cast<char>(v >> (8 * i));
  out->append(buf, sizeof(buf));
}

}  // namespace

uint64_t RangeHashTree::EntryHash(uint64_t token, std::string_view key, const Envelope& e) {
  // A fixed layout, so every build hashes the same record the same way whatever its encoding
  // on disk (format 1 and an equal format 2 record hash alike).
  // Reused by the thread: a tree build hashes every key of its range, and an allocation per key
  // cost more than the hash itself (bench/README.md "Anti-entropy").
  thread_local std::string buf;
  buf.clear();
  AppendBigEndian64(&buf, token);
  AppendBigEndian32(&buf, static_cast<uint32_t>(key.size()));
  buf.append(key);
  AppendLe64(&buf, e.timestamp);
  AppendBigEndian32(&buf, e.node_id);
  buf.push_back(static_cast<char>((e.tombstone ? 1 : 0) | (e.value_absent ? 2 : 0)));
  const Version ev = e.expiry_version();
  AppendLe64(&buf, ev.timestamp);
  AppendBigEndian32(&buf, ev.node_id);
  AppendLe64(&buf, e.expires_at_ms());
  // Counter entries (format 3) only when there are any, so every other record hashes as before.
  for (const CounterEntry& c : e.counter) {
    AppendLe64(&buf, c.actor);
    AppendLe64(&buf, c.base.timestamp);
    AppendBigEndian32(&buf, c.base.node_id);
    AppendLe64(&buf, c.inc);
    AppendLe64(&buf, c.dec);
  }
  // Hash fields (format 4) likewise: name and version identify a field's write.
  for (const HashField& f : e.hash) {
    AppendBigEndian32(&buf, static_cast<uint32_t>(f.name.size()));
    buf.append(f.name);
    AppendLe64(&buf, f.version.timestamp);
    AppendBigEndian32(&buf, f.version.node_id);
    buf.push_back(static_cast<char>(f.deleted ? 1 : 0));
  }
  // Set entries (format 5): every time in an entry, so a replica that missed a remove differs.
  for (const SetMember& m : e.set) {
    AppendBigEndian32(&buf, static_cast<uint32_t>(m.name.size()));
    buf.append(m.name);
    AppendBigEndian32(&buf, m.actor);
    AppendLe64(&buf, m.add);
    AppendLe64(&buf, m.removed);
    AppendLe64(&buf, m.removed_at);
  }
  return XXH3_64bits(buf.data(), buf.size());
}

RangeHashTree RangeHashTree::FromEntries(const TokenRange& range,
                                         const std::vector<RangeEntry>& entries) {
  RangeHashTree t;
  t.range_ = range;
  t.tokens_.reserve(entries.size());
  t.prefix_.reserve(entries.size() + 1);
  t.prefix_.push_back(0);
  for (const RangeEntry& e : entries) {
    if (!range.Contains(e.token)) continue;
    t.tokens_.push_back(e.token);
    t.prefix_.push_back(t.prefix_.back() ^ EntryHash(e.token, e.key, e.envelope));
  }
  return t;
}

StatusOr<RangeHashTree> RangeHashTree::Build(Storage* storage, const TokenRange& range,
                                             const StorageSnapshot* snapshot) {
  if (!range.Valid()) return Status::InvalidArgument("hash tree range has first > last");
  RangeHashTree t;
  t.range_ = range;
  t.prefix_.push_back(0);
  ScanOptions options;
  options.snapshot = snapshot;
  options.max_entries = 4096;
  options.include_tombstones = true;
  // The entry hash leaves the value bytes out: not copying them saves an allocation per key.
  options.values = false;
  for (;;) {
    auto batch = storage->Scan(range, options);
    if (!batch.ok()) return batch.status().WithContext("building hash tree");
    for (const RangeEntry& e : batch->entries) {
      t.tokens_.push_back(e.token);
      t.prefix_.push_back(t.prefix_.back() ^ EntryHash(e.token, e.key, e.envelope));
    }
    if (batch->done || batch->entries.empty()) break;
    options.cursor = std::move(batch->cursor);
  }
  t.tokens_.shrink_to_fit();
  t.prefix_.shrink_to_fit();
  return t;
}

RangeHashTree::NodeHash RangeHashTree::Node(const TokenRange& span) const {
  const uint64_t first = std::max(span.first, range_.first);
  const uint64_t last = std::min(span.last, range_.last);
  if (first > last) return {};
  const auto lo = std::lower_bound(tokens_.begin(), tokens_.end(), first) - tokens_.begin();
  const auto hi = std::upper_bound(tokens_.begin(), tokens_.end(), last) - tokens_.begin();
  return {prefix_[hi] ^ prefix_[lo], static_cast<uint64_t>(hi - lo)};
}

std::vector<TokenRange> RangeHashTree::SplitSpan(const TokenRange& span, uint32_t parts) {
  // 128-bit: the whole ring has 2^64 tokens.
  const unsigned __int128 width = static_cast<unsigned __int128>(span.last - span.first) + 1;
  const unsigned __int128 n = std::min<unsigned __int128>(parts, width);
  std::vector<TokenRange> out;
  out.reserve(static_cast<size_t>(n));
  for (unsigned __int128 i = 0; i < n; ++i) {
    const auto lo = static_cast<uint64_t>(span.first + i * width / n);
    const auto hi = static_cast<uint64_t>(span.first + (i + 1) * width / n - 1);
    out.push_back({lo, hi});
  }
  return out;
}

}  // namespace shardkv::storage
