// RangeHashTree: the anti-entropy hash tree of one token range of one replica (design.md
// "Anti-entropy"), built by a scan of the data, never from the write path: damage that bypasses
// writes (a lost SST, an ingested file, `ldb` editing the database) must show.
//
// Entry hash: XXH3-64 of (token, key, value version, tombstone, value-absent, expiry version,
// expires_at), i.e. everything LWW compares, but not the value bytes: one version is one write,
// and leaving values out keeps hashing cost per key constant.
//
// Node hash: the XOR of the entry hashes of every key whose token is in the node's span (as
// Cassandra's MerkleTree combines rows). A node's hash therefore depends on its span only, not on
// the shape of the tree above or below it: two replicas with different key counts still agree
// on every node they both ask about, and the comparing side may cut the range where it likes.
// XOR of 64-bit hashes of distinct keys: a false "equal" for differing contents has probability
// about 2^-64 per node compared.
//
// Shape: the range is split in halves recursively (children by token width, the tokens are
// uniform hashes), and a node is a leaf once it holds at most kLeafKeys keys on every replica
// compared (or a single token). So the depth follows the key count, about log2(n / kLeafKeys),
// and a leaf covers a bounded number of keys. The comparison descends kLevelsPerRound levels at a
// time (SplitSpan into 2^kLevelsPerRound children), see rebalance/range_repair.h.
//
// Built once per (range, repair), the tree is the sorted entry hashes with prefix XORs: 16 bytes
// per key, and any span's hash and count in O(log n).
//
// Thread-safety: immutable after Build; concurrent reads are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shardkv/status.h"
#include "shardkv/token_range.h"
#include "storage/storage.h"

namespace shardkv::storage {

class RangeHashTree {
 public:
  // A leaf holds at most this many keys (on each replica compared).
  static constexpr uint32_t kLeafKeys = 64;
  // Levels the comparison descends per round trip: a differing node is cut in 16.
  static constexpr int kLevelsPerRound = 4;

  struct NodeHash {
    uint64_t hash = 0;
    uint64_t count = 0;  // keys (tombstones and expiry-only records included) in the span
    friend bool operator==(const NodeHash&, const NodeHash&) = default;
  };

  // Scans `range` of `storage` (through `snapshot` when non-null). Corruption if an entry does
  // not decode.
  [[nodiscard]] static StatusOr<RangeHashTree> Build(Storage* storage, const TokenRange& range,
                                                     const StorageSnapshot* snapshot = nullptr);
  // The tree of entries already at hand (tests, and anyone holding a scan).
  static RangeHashTree FromEntries(const TokenRange& range, const std::vector<RangeEntry>& entries);

  static uint64_t EntryHash(uint64_t token, std::string_view key, const Envelope& envelope);

  // `span` is clipped to the tree's range; outside it the node is empty (hash 0, count 0).
  NodeHash Node(const TokenRange& span) const;
  NodeHash Root() const { return Node(range_); }

  const TokenRange& range() const { return range_; }
  size_t size() const { return tokens_.size(); }
  // Memory held, for caches that bound it.
  size_t bytes() const { return tokens_.capacity() * 8 + prefix_.capacity() * 8; }

  // `span` cut into `parts` contiguous pieces of (nearly) equal token width, in order; fewer if
  // the span has fewer tokens. REQUIRES: span.Valid(), parts >= 1.
  static std::vector<TokenRange> SplitSpan(const TokenRange& span, uint32_t parts);

 private:
  TokenRange range_;
  std::vector<uint64_t> tokens_;  // sorted (storage order)
  std::vector<uint64_t> prefix_;  // prefix_[i] = XOR of the first i entry hashes
};

}  // namespace shardkv::storage
