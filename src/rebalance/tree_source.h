// TreeSource: a replica's side of anti-entropy (design.md "Anti-entropy"). It answers the hash
// tree queries of a range's repair from a tree built by one scan of its data
// (storage/range_hash_tree.h) and applies the records a repair pushes to it with the LWW batch
// apply (Storage::ApplyBatch), so the newest version wins, tombstones included. A replica's leaf
// entries are read by the rebalancer's streamScan (StreamSource), not here.
//
// Sessions: the first query of (session, range) builds the tree; later queries of the same
// session (one per level round of the comparison) use it. Trees idle for a minute, or released
// by their repair, are dropped; all trees together may hold at most kMaxTreeBytes.
//
// Fencing: this node must hold the range, and every pushed token, under its map (current or
// pending); otherwise StaleEpoch. A node that needs repair (`refusal`) builds no trees for other
// nodes: its data may hold values whose deletes other replicas already collected. (Its own
// comparisons, which bring it back, read its data through a TreeSource without a refusal:
// RepairService.)
//
// Thread-safety: all methods may be called concurrently. Tree and Apply block on storage: call
// them off the I/O threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "cluster/map_store.h"
#include "common/mutex.h"
#include "net/messages.h"
#include "storage/range_hash_tree.h"
#include "storage/storage.h"

namespace shardkv::rebalance {

// The wire form of a stored record, and back.
net::RepairEntry ToRepairEntry(const storage::RangeEntry& e);
storage::RangeEntry FromRepairEntry(net::RepairEntry e);

class TreeSource {
 public:
  static constexpr size_t kMaxTreeBytes = size_t{512} << 20;

  // Called on a release that reports a complete repair (TreeQuery::repaired_ms): range,
  // replicas, horizon (gc_horizon.h).
  using OnRepaired = std::function<void(const TokenRange&, std::vector<uint32_t>, uint64_t)>;

  TreeSource(uint32_t self_id, storage::Storage* storage, cluster::MapStore* maps,
             std::function<Status()> refusal = {}, OnRepaired on_repaired = {})
      : self_id_(self_id),
        storage_(storage),
        maps_(maps),
        refusal_(std::move(refusal)),
        on_repaired_(std::move(on_repaired)) {}

  // The hash and key count of each span of the query (none for a release).
  StatusOr<std::vector<net::TreeNode>> Tree(const net::TreeQuery& query);
  StatusOr<net::ApplyCounts> Apply(const net::ApplyEntries& apply);

  size_t sessions() const;
  void Close();

 private:
  using Key = std::tuple<uint64_t, uint64_t, uint64_t>;  // session, first, last
  struct Session {
    std::shared_ptr<const storage::RangeHashTree> tree;
    std::chrono::steady_clock::time_point last_used;
  };

  const uint32_t self_id_;
  storage::Storage* storage_;
  cluster::MapStore* maps_;
  const std::function<Status()> refusal_;
  const OnRepaired on_repaired_;
  mutable common::Mutex mu_;
  std::map<Key, Session> sessions_ GUARDED_BY(mu_);
};

}  // namespace shardkv::rebalance
