// PlacementComparison: the placement lab's measurements (design.md "The placement lab").
//
// For each configuration (algorithm x hash x vnodes) it builds the placement over the lab's
// membership, looks up every key once, and reports
//   - uniformity: the share of keys per node (ShareStats);
//   - migration: the % of keys whose owner changes when one node is added (the pattern's next
//     name), when the last node is removed and when the middle node (index N/2) is removed, each
//     beside the ideal (the share of the node that joins or leaves). Owners are compared by node
//     *name*, so Jump's renumbering on a middle removal counts as the movement it really causes;
//   - cost: ns per key for hashing and for the owner lookup, build time, and MemoryBytes().
//
// Keys are hashed once per configuration: every algorithm's KeyToken depends on the hash only,
// not on the membership, so the same tokens serve the base placement and the three changed ones.
//
// Thread-safety: a PlacementComparison reuses scratch buffers; use one per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "placement_lab/key_set.h"
#include "placement_lab/lab_membership.h"
#include "placement_lab/share_stats.h"
#include "shardkv/hash.h"
#include "shardkv/placement.h"
#include "shardkv/status.h"

namespace shardkv::lab {

struct Configuration {
  Algorithm algorithm = Algorithm::kRing;
  hash::HashKind hash = hash::HashKind::kXxh3;
  int vnodes = 0;  // ring only; 0 for the other algorithms

  // "ring xxh3 v160", "jump crc32", "ketama md5".
  std::string Label() const;
};

struct CompareOptions {
  // Limits chosen so that any one of them at its maximum (the others at their defaults) runs
  // within a minute on a 2-core machine (tests/integration/limits_cli_test.cc).
  static constexpr int kMaxVnodes = 100000;
  // Ring points (sum of weights x vnodes, added node included) one ring may have: about 16 bytes
  // each plus build time; 10 M builds in seconds, 10^9 (--nodes 10000 --vnodes 100000) would
  // exhaust memory.
  static constexpr double kMaxRingPoints = 10'000'000;
  static constexpr uint32_t kMaxMaglevTable = 1'000'003;  // a prime

  std::vector<Algorithm> algorithms;   // empty = all six
  std::vector<hash::HashKind> hashes;  // empty = {xxh3}
  std::vector<int> vnodes;             // empty = {160}
  uint32_t maglev_table_size = 65537;
};

// Expands the cross product in the order algorithms x vnodes x hashes. vnodes apply to the ring
// only, and ketama always hashes with MD5 (it is libmemcached-compatible), so both collapse;
// duplicates are dropped. Errors: a vnode count < 1 or above kMaxVnodes, a Maglev table above
// kMaxMaglevTable.
StatusOr<std::vector<Configuration>> ExpandConfigurations(const CompareOptions& options);

struct Movement {
  double moved_pct = std::numeric_limits<double>::quiet_NaN();  // NaN: not measurable (N = 1)
  double ideal_pct = std::numeric_limits<double>::quiet_NaN();
};

struct ConfigResult {
  Configuration config;
  ShareStats shares;
  Movement add;
  Movement remove_last;
  Movement remove_middle;
  double added_node_share_pct = 0;  // the added node's share after the add: a ring moves this
  // Ring only (NaN elsewhere): % of ring points whose clockwise successor belongs to the same
  // node. Random positions give about 1/N; a hash that clusters a node's "name#i" strings (fnv1a)
  // gives far more, and a too-regular one (raw crc32) can give less.
  double vnode_adjacency_pct = std::numeric_limits<double>::quiet_NaN();
  double hash_ns_per_key = 0;   // KeyToken
  double owner_ns_per_key = 0;  // Owner(token)
  double build_us = 0;
  size_t memory_bytes = 0;

  double lookup_ns_per_key() const { return hash_ns_per_key + owner_ns_per_key; }
};

struct CompareReport {
  std::string keys_description;
  size_t key_count = 0;
  LabMembership membership;
  uint32_t maglev_table_size = 0;
  std::vector<ConfigResult> results;
};

class PlacementComparison {
 public:
  // `membership` and `keys` must outlive this object.
  PlacementComparison(const LabMembership& membership, const KeySet& keys,
                      uint32_t maglev_table_size);

  // Errors: the placement cannot be built (e.g. a Maglev table below 100 * N, a fractional
  // weight for ketama); the message starts with the algorithm's name.
  StatusOr<ConfigResult> Measure(const Configuration& config);

 private:
  StatusOr<std::unique_ptr<Placement>> Build(const Configuration& config,
                                             const std::vector<NodeSpec>& nodes) const;
  // % of keys whose owner, by name, differs between the base owners_ and `changed`. When
  // `count_node` names a node of `changed`, also counts its keys into *count_node_keys.
  double MovedPct(const Placement& changed, const std::string& count_node,
                  uint64_t* count_node_keys) const;

  const LabMembership& membership_;
  const KeySet& keys_;
  uint32_t maglev_table_size_;
  // Node name -> index in membership_.nodes: placements are compared by name.
  std::unordered_map<std::string_view, uint32_t> lab_index_;
  std::vector<uint64_t> tokens_;  // per key, reused across configurations
  std::vector<uint32_t> owners_;  // per key: base owner as an index into membership_.nodes
};

// Progress callback: called before each configuration with its 0-based index.
using ProgressFn = std::function<void(size_t index, size_t total, const Configuration& config)>;

// Measures every configuration of `options`. Stops at the first error.
StatusOr<CompareReport> RunComparison(const CompareOptions& options,
                                      const LabMembership& membership, const KeySet& keys,
                                      const ProgressFn& progress = {});

}  // namespace shardkv::lab
