// RangeRepair: anti-entropy of one token range between all its replicas (design.md
// "Anti-entropy"), run by one of them (the comparing node, `self`).
//
// 1. Trees, top-down. Every replica answers the hash and key count of the spans asked
//    (TreeSource; this node's own tree locally). The comparison starts at the whole range; a span
//    whose (hash, count) differs between replicas is a leaf once every replica holds at most
//    RangeHashTree::kLeafKeys keys in it (or it is a single token), else it is cut into
//    2^kLevelsPerRound children for the next round. Equal spans are done.
// 2. Leaves. The differing leaves' entries are read from every replica by streamScan (the
//    rebalancer's source-side scan, through a snapshot), merged per key (storage::Merge: per
//    register the newest version, tombstones included), and each replica is sent exactly the
//    records where it lacks the merge (TreeSource::Apply there, ApplyBatch here): both ways, and
//    a deleted key never comes back, as the tombstone is newer than the value it deleted.
//
// Every round asks the replicas at once (this node's own tree built meanwhile), and the session
// is released (with the GC horizon, when the range completed) to all of them at once at the end,
// after the leaves: a comparing node waits for the slowest replica per round, not for each in
// turn (bench/README.md "Anti-entropy").
//
// A replica that fails is left out for the rest of the range, which then counts as failed; the
// others are still repaired between themselves. Run does not log the failure: the caller does,
// since background repair meets a down replica at every range and must not flood the log.
//
// Thread-safety: Run may be called concurrently; it blocks on the peers (never on an I/O thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cluster/map_store.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "rebalance/stream_source.h"
#include "rebalance/tree_source.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

struct RangeRepairResult {
  bool differed = false;
  uint64_t leaves_differed = 0;
  uint64_t keys_fetched = 0;   // leaf entries read from the replicas (this node's own included)
  uint64_t bytes_fetched = 0;  // their key and value bytes
  uint64_t tree_bytes = 0;     // tree query and reply frames exchanged with the other replicas
  uint64_t own_keys = 0;       // this node's keys in the range (its tree's root count)
  std::map<uint32_t, net::NodeStreamed> streamed;  // records written to each replica
  Status status;                                   // the first failure (the range is incomplete)
};

struct RangeRepairDeps {
  uint32_t self_id = 0;
  storage::Storage* storage = nullptr;
  net::PeerPool* peers = nullptr;
  TreeSource* trees = nullptr;               // this node's
  StreamSource* stream_source = nullptr;     // this node's
  std::chrono::milliseconds timeout{30000};  // per request (a tree query scans the range)
};

class RangeRepair {
 public:
  // Leaves whose entries are read and merged together.
  static constexpr size_t kLeavesPerBatch = 256;
  // Records per push to one replica.
  static constexpr size_t kApplyEntries = 1024;
  static constexpr uint64_t kApplyBytes = uint64_t{4} << 20;

  explicit RangeRepair(RangeRepairDeps deps) : d_(std::move(deps)) {}

  // REQUIRES: `replicas` holds self_id; every one of them holds `range` under `map`.
  // With `horizon_ms`, a range repaired with every one of `replicas` (the result OK) tells the
  // others so with the release of its tree session: GC horizon `horizon_ms` (gc_horizon.h). Best
  // effort: a replica not told keeps its older horizon, and only waits longer to collect
  // tombstones. The caller records its own.
  RangeRepairResult Run(const ClusterMap& map, const TokenRange& range,
                        const std::vector<uint32_t>& replicas,
                        std::optional<uint64_t> horizon_ms = std::nullopt);

 private:
  struct Peer {
    uint32_t id = 0;
    std::string address;  // empty for self
    bool live = true;
  };

  StatusOr<net::ResponseBody> Call(const ClusterMap& map, const Peer& peer, net::RequestBody body,
                                   uint64_t* frame_bytes);
  // `query` to every live one of `peers` at once, this node's own answered meanwhile on this
  // thread: every replica builds its tree at a session's first query (a scan of the range), so
  // they scan at the same time rather than one after another, and a release waits for the
  // slowest replica only. Answer i is peers[i]'s (nullopt for one not live).
  std::vector<std::optional<StatusOr<std::vector<net::TreeNode>>>> TreeAll(
      const ClusterMap& map, const std::vector<Peer>& peers, const net::TreeQuery& query,
      uint64_t* bytes);
  StatusOr<std::vector<storage::RangeEntry>> Entries(const ClusterMap& map, const Peer& peer,
                                                     uint64_t stream_id,
                                                     const std::vector<TokenRange>& leaves);
  Status Push(const ClusterMap& map, const Peer& peer,
              const std::vector<storage::RangeEntry>& entries);
  void Fail(Peer* peer, const Status& s, RangeRepairResult* result);

  const RangeRepairDeps d_;
};

}  // namespace shardkv::rebalance
