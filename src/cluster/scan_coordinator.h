// ScanCoordinator: one batch of an unordered, resumable scan of the whole cluster (design.md
// "Scans"), for the client op `scan` and the Redis SCAN family.
//
// The cursor is a position in token space: "every key with a token below the cursor has been
// returned". 0 starts a scan and 0 comes back once the end of the token space is reached. A
// batch walks the token space from the cursor one *piece* at a time, a piece being a token range
// over which both the current and the pending placement are constant (ring mode: the
// intersection of both rings' arcs; jump mode: one shard), so one replica set serves all of it.
// Each piece is read from the replicas that serve reads at the map's stage (ClusterMap::
// ReadReplicas, as the Coordinator does), as many as the consistency level asks (one: one live
// replica; quorum / all: that many, merged by newest version per key). A replica batch ends at a
// token boundary, so keys that share a token are never split between batches.
//
// Placement never changes the token order, so a cursor stays valid across membership changes:
// a key may come twice (its replica set may have been read twice), but never be skipped.
//
// Bounds: a batch stops once it has examined `count` entries (the COUNT hint), or returned
// kMaxScanBatchBytes of keys, or visited kMaxPiecesPerBatch pieces, whichever comes first.
//
// Thread-safety: thread-safe; `done` runs on a network thread or the caller's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cluster/map_store.h"
#include "net/messages.h"
#include "net/peer_pool.h"
#include "shardkv/cluster_map.h"
#include "shardkv/token_range.h"
#include "storage/storage.h"

namespace shardkv::cluster {

// Whether a read shows this stored version: the one place that decides it for scans. Today a
// tombstone is hidden; once records carry an expiry, an expired one must be hidden here too.
bool Visible(const storage::Envelope& envelope, uint64_t now_ms);

inline constexpr uint32_t kDefaultScanCount = 10;  // Redis's default COUNT
inline constexpr uint32_t kMaxScanCount = 100000;  // larger hints are cut to this
inline constexpr size_t kMaxScanBatchBytes = size_t{4} << 20;
inline constexpr size_t kMaxPiecesPerBatch = 64;

// The rest of the piece of token space holding `token` under `map` (see above): from `token` to
// the piece's last token. False when `token` is past every token the map can place (jump mode
// only: above the last shard's tokens).
bool ScanPiece(const ClusterMap& map, uint64_t token, TokenRange* piece);

// The replica side: this node's versions in [r.first, r.last], ending at a token boundary
// after about r.max_entries entries or r.max_bytes, filtered by r.match.
StatusOr<net::ReplicaScanResponse> ReadReplicaRange(storage::Storage* storage,
                                                    const net::ReplicaScanRequest& r);

struct ScanCoordinatorOptions {
  uint32_t self_id = 0;
  std::chrono::milliseconds replica_timeout{1000};
  // As CoordinatorOptions::read_refusal: a replica that needs repair is not asked, and the piece
  // fails over to the next one.
  std::function<Status(uint32_t node_id)> read_refusal;
};

class ScanCoordinator : public std::enable_shared_from_this<ScanCoordinator> {
 public:
  using Done = std::function<void(StatusOr<net::ScanResponse>)>;

  // REQUIRES: the pointers outlive the coordinator and every callback it runs.
  ScanCoordinator(ScanCoordinatorOptions options, storage::Storage* storage, MapStore* maps,
                  net::PeerPool* peers);

  void Scan(std::shared_ptr<const ClusterMap> map, net::ScanRequest request,
            net::Consistency consistency, Done done);

 private:
  struct Op;
  struct PieceRead;

  void Step(const std::shared_ptr<Op>& op);
  void ReadPiece(const std::shared_ptr<Op>& op, TokenRange piece);
  void AskReplica(const std::shared_ptr<PieceRead>& read, uint32_t id);
  void FinishReplica(const std::shared_ptr<PieceRead>& read, uint32_t id,
                     StatusOr<net::ReplicaScanResponse> result);
  void MergePiece(const std::shared_ptr<PieceRead>& read);

  const ScanCoordinatorOptions options_;
  storage::Storage* storage_;
  MapStore* maps_;
  net::PeerPool* peers_;
};

}  // namespace shardkv::cluster
