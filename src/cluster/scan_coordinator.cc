#include "cluster/scan_coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "common/glob.h"
#include "common/mutex.h"
#include "shardkv/hash_ring.h"

namespace shardkv::cluster {
namespace {

// Rounds of a batch through a newer map after a replica answered at one (as the Coordinator's
// redrives).
constexpr int kMaxRedrives = 3;
// Batches of one token's keys at most when finishing the last token of a replica batch. Keys
// share a token only on a hash collision (jump mode keeps 32 bits of hash per shard), so this
// is far above any real count; reaching it is reported rather than looped on.
constexpr int kMaxTokenBatches = 1024;

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// The arc of `ring` holding `token` (Ranges() covers the token space exactly once, in order).
TokenRange ArcOf(const HashRing& ring, uint64_t token) {
  const std::vector<HashRing::Arc> arcs = ring.Ranges();
  auto it = std::upper_bound(arcs.begin(), arcs.end(), token,
                             [](uint64_t t, const HashRing::Arc& a) { return t < a.range.first; });
  if (it == arcs.begin()) return TokenRange{};  // unreachable: the first arc starts at 0
  return std::prev(it)->range;
}

uint32_t Required(const ClusterMap& map, net::Consistency c, size_t set_size) {
  const auto n = static_cast<uint32_t>(set_size);
  switch (c) {
    case net::Consistency::kOne:
      return std::min<uint32_t>(1, n);
    case net::Consistency::kAll:
      return n;
    default:
      return std::min(map.ReadQuorum(), n);
  }
}

}  // namespace

bool Visible(const storage::Envelope& envelope, uint64_t now_ms) { return envelope.LiveAt(now_ms); }

net::ValueKind KindOf(storage::Collection c) {
  switch (c) {
    case storage::Collection::kHash:
      return net::ValueKind::kHash;
    case storage::Collection::kSet:
      return net::ValueKind::kSet;
    case storage::Collection::kNone:
      break;
  }
  return net::ValueKind::kString;
}

bool ScanPiece(const ClusterMap& map, uint64_t token, TokenRange* piece) {
  if (map.ring() == nullptr) {
    // Jump mode: the token is shard << 32 | low hash bits, and a shard is the unit of placement.
    const uint64_t shard = token >> 32;
    if (shard >= map.params().shards) return false;
    *piece = TokenRange{token, (shard << 32) | 0xffffffffu};
    return true;
  }
  TokenRange arc = ArcOf(*map.ring(), token);
  if (map.pending_ring() != nullptr) {
    const TokenRange pending = ArcOf(*map.pending_ring(), token);
    arc.first = std::max(arc.first, pending.first);
    arc.last = std::min(arc.last, pending.last);
  }
  *piece = TokenRange{token, arc.last};
  return true;
}

StatusOr<net::ReplicaScanResponse> ReadReplicaRange(storage::Storage* storage,
                                                    const net::ReplicaScanRequest& r) {
  if (r.first > r.last) return Status::InvalidArgument("scan range has first > last");
  storage::ScanOptions so;
  so.max_entries = std::clamp<size_t>(r.max_entries, 1, kMaxScanCount);
  so.max_bytes = r.max_bytes == 0 ? kMaxScanBatchBytes : std::min(r.max_bytes, kMaxScanBatchBytes);
  so.include_tombstones = true;  // the coordinator's merge needs them to hide older versions
  auto batch = storage->Scan(TokenRange{r.first, r.last}, so);
  if (!batch.ok()) return batch.status();
  std::vector<storage::RangeEntry> entries = std::move(batch->entries);
  bool done = batch->done;
  uint64_t next = 0;
  if (!done) {
    if (entries.empty()) return Status::Internal("a storage scan batch made no progress");
    // Finish every key of the last token read, so that the next batch can start at a token.
    const uint64_t last_token = entries.back().token;
    std::string cursor = batch->cursor;
    bool finished = false;
    for (int i = 0; i < kMaxTokenBatches && !finished; ++i) {
      storage::ScanOptions more = so;
      more.cursor = cursor;
      auto rest = storage->Scan(TokenRange{last_token, last_token}, more);
      if (!rest.ok()) return rest.status();
      for (auto& e : rest->entries) entries.push_back(std::move(e));
      cursor = rest->cursor;
      finished = rest->done;
    }
    if (!finished) {
      return Status::Internal("token " + std::to_string(last_token) +
                              " holds more keys than a scan batch can finish");
    }
    if (last_token == r.last) {
      done = true;
    } else {
      next = last_token + 1;
    }
  }
  net::ReplicaScanResponse out;
  out.done = done;
  out.next = done ? 0 : next;
  out.examined = static_cast<uint32_t>(std::min<size_t>(entries.size(), UINT32_MAX));
  const uint64_t now = NowMs();
  for (auto& e : entries) {
    if (!r.match.empty() && !common::GlobMatch(r.match, e.key)) continue;
    const storage::Version expiry = e.envelope.expiry_version();
    out.entries.push_back(net::ScanEntry{e.token, std::move(e.key), e.envelope.timestamp,
                                         e.envelope.node_id, !Visible(e.envelope, now),
                                         expiry.timestamp, expiry.node_id,
                                         KindOf(e.envelope.collection())});
  }
  return out;
}

struct ScanCoordinator::Op {
  std::shared_ptr<const ClusterMap> map;
  net::ScanRequest request;
  net::Consistency consistency = net::Consistency::kDefault;
  Done done;
  uint32_t count = kDefaultScanCount;
  // Progress of the batch; only one piece read is in flight at a time, so no lock is needed.
  uint64_t cursor = 0;
  net::ScanResponse reply;
  size_t bytes = 0;
  size_t examined = 0;
  size_t pieces = 0;
  int redrives = 0;
};

// One piece read from `required` replicas of its read set, failing over to the rest.
struct ScanCoordinator::PieceRead {
  std::shared_ptr<Op> op;
  TokenRange piece;
  std::vector<uint32_t> replicas;  // the read set, this node first when it is in it
  uint32_t required = 0;

  common::Mutex mu;
  size_t next_untried GUARDED_BY(mu) = 0;
  size_t in_flight GUARDED_BY(mu) = 0;
  bool finished GUARDED_BY(mu) = false;
  std::string failures GUARDED_BY(mu);
  bool stale GUARDED_BY(mu) = false;
  std::vector<net::ReplicaScanResponse> answers GUARDED_BY(mu);
};

ScanCoordinator::ScanCoordinator(ScanCoordinatorOptions options, storage::Storage* storage,
                                 MapStore* maps, net::PeerPool* peers)
    : options_(options), storage_(storage), maps_(maps), peers_(peers) {}

void ScanCoordinator::Scan(std::shared_ptr<const ClusterMap> map, net::ScanRequest request,
                           net::Consistency consistency, Done done) {
  auto op = std::make_shared<Op>();
  op->map = std::move(map);
  op->count = request.count == 0 ? kDefaultScanCount : std::min(request.count, kMaxScanCount);
  op->cursor = request.cursor;
  op->request = std::move(request);
  op->consistency = consistency;
  op->done = std::move(done);
  Step(op);
}

void ScanCoordinator::Step(const std::shared_ptr<Op>& op) {
  // Bounded by kMaxPiecesPerBatch: each round either reads a piece or finishes the batch.
  TokenRange piece;
  if (!ScanPiece(*op->map, op->cursor, &piece)) {
    op->reply.cursor = 0;  // past the last token: the scan is complete
    return op->done(std::move(op->reply));
  }
  const bool more =
      op->pieces < kMaxPiecesPerBatch && op->examined < op->count && op->bytes < kMaxScanBatchBytes;
  if (!more) {
    op->reply.cursor = op->cursor;
    return op->done(std::move(op->reply));
  }
  ++op->pieces;
  ReadPiece(op, piece);
}

void ScanCoordinator::ReadPiece(const std::shared_ptr<Op>& op, TokenRange piece) {
  auto read = std::make_shared<PieceRead>();
  read->op = op;
  read->piece = piece;
  read->replicas = op->map->ReadReplicas(piece.first);
  auto self = std::find(read->replicas.begin(), read->replicas.end(), options_.self_id);
  if (self != read->replicas.end()) std::rotate(read->replicas.begin(), self, self + 1);
  read->required = Required(*op->map, op->consistency, read->replicas.size());
  if (read->required == 0) return op->done(Status::Internal("the cluster map places no replica"));
  std::vector<uint32_t> first;
  {
    common::MutexLock lock(&read->mu);
    for (; read->next_untried < read->required; ++read->next_untried) {
      first.push_back(read->replicas[read->next_untried]);
    }
    read->in_flight = first.size();
  }
  for (uint32_t id : first) AskReplica(read, id);
}

void ScanCoordinator::AskReplica(const std::shared_ptr<PieceRead>& read, uint32_t id) {
  const std::shared_ptr<Op>& op = read->op;
  net::ReplicaScanRequest req{read->piece.first, read->piece.last,
                              static_cast<uint32_t>(op->count - op->examined),
                              kMaxScanBatchBytes - op->bytes, op->request.match};
  if (options_.read_refusal) {
    if (Status refused = options_.read_refusal(id); !refused.ok()) {
      return FinishReplica(read, id, refused);
    }
  }
  if (id == options_.self_id) return FinishReplica(read, id, ReadReplicaRange(storage_, req));
  const ClusterNode* node = op->map->FindNode(id);
  if (node == nullptr) return FinishReplica(read, id, Status::Internal("replica not in the map"));
  net::Request request;
  request.epoch = op->map->epoch();
  request.cluster_id = op->map->cluster_id();
  request.body = std::move(req);
  peers_->Call(node->address, std::move(request), options_.replica_timeout,
               [self = shared_from_this(), read, id](StatusOr<net::Response> reply) {
                 if (!reply.ok()) return self->FinishReplica(read, id, reply.status());
                 (void)self->maps_->InstallIfNewer(reply->epoch, reply->cluster_map);
                 if (!reply->ok()) return self->FinishReplica(read, id, reply->status());
                 auto* body = std::get_if<net::ReplicaScanResponse>(&reply->body);
                 if (body == nullptr) {
                   return self->FinishReplica(
                       read, id, Status::Corruption("unexpected reply to a replica scan"));
                 }
                 self->FinishReplica(read, id, std::move(*body));
               });
}

void ScanCoordinator::FinishReplica(const std::shared_ptr<PieceRead>& read, uint32_t id,
                                    StatusOr<net::ReplicaScanResponse> result) {
  std::optional<uint32_t> retry;
  bool merge = false;
  bool fail = false;
  {
    common::MutexLock lock(&read->mu);
    --read->in_flight;
    if (result.ok()) {
      read->answers.push_back(std::move(result).value());
    } else {
      if (result.status().code() == Status::Code::kStaleEpoch) read->stale = true;
      if (!read->failures.empty()) read->failures += ", ";
      read->failures += "node " + std::to_string(id) + " (" + result.status().message() + ")";
      if (read->next_untried < read->replicas.size()) {
        retry = read->replicas[read->next_untried++];
        ++read->in_flight;
      }
    }
    if (!read->finished && read->answers.size() >= read->required) {
      read->finished = merge = true;
    } else if (!read->finished && read->in_flight == 0 && !retry) {
      read->finished = fail = true;
    }
  }
  if (retry) return AskReplica(read, *retry);
  if (merge) return MergePiece(read);
  if (!fail) return;
  const std::shared_ptr<Op>& op = read->op;
  auto current = maps_->Current();
  if (current && current->epoch() > op->map->epoch() && op->redrives < kMaxRedrives) {
    // A replica moved on to a newer map: the cursor means the same there, so read again.
    ++op->redrives;
    op->map = std::move(current);
    --op->pieces;
    return Step(op);
  }
  std::string failures;
  {
    common::MutexLock lock(&read->mu);
    failures = read->failures;
  }
  op->done(Status::Unavailable("scan of tokens " + std::to_string(read->piece.first) + ".." +
                               std::to_string(read->piece.last) + ": " +
                               std::to_string(read->required) +
                               " replicas needed, unavailable: " + failures));
}

void ScanCoordinator::MergePiece(const std::shared_ptr<PieceRead>& read) {
  const std::shared_ptr<Op>& op = read->op;
  std::vector<net::ReplicaScanResponse> answers;
  {
    common::MutexLock lock(&read->mu);
    answers = std::move(read->answers);
  }
  // Every replica covered the tokens below its `next`; together, those below the smallest.
  bool done = true;
  uint64_t next = UINT64_MAX;
  size_t examined = 0;
  for (const auto& a : answers) {
    if (!a.done) {
      done = false;
      next = std::min(next, a.next);
    }
    examined = std::max<size_t>(examined, a.examined);
  }
  // Newest version per key among the replicas, over the tokens every replica covered.
  std::map<std::pair<uint64_t, std::string>, const net::ScanEntry*> newest;
  for (const auto& a : answers) {
    for (const auto& e : a.entries) {
      if (!done && e.token >= next) continue;
      auto [it, inserted] = newest.try_emplace({e.token, e.key}, &e);
      if (!inserted) {
        const net::ScanEntry* have = it->second;
        // The value register first, then the expiry register (both LWW), as a read merges.
        if (std::tuple(e.ts, e.node_id, e.expiry_ts, e.expiry_node_id) >
            std::tuple(have->ts, have->node_id, have->expiry_ts, have->expiry_node_id)) {
          it->second = &e;
        }
      }
    }
  }
  for (const auto& [key, e] : newest) {
    if (e->hidden) continue;
    if (op->request.typed && e->kind != op->request.type) continue;
    op->bytes += e->key.size();
    op->reply.keys.push_back(e->key);
  }
  // An empty piece costs nothing toward COUNT (kMaxPiecesPerBatch bounds those), so that an
  // almost empty cluster is scanned in a few batches, as in Redis.
  op->examined += examined;
  if (done) {
    if (read->piece.last == UINT64_MAX) {
      op->reply.cursor = 0;
      return op->done(std::move(op->reply));
    }
    op->cursor = read->piece.last + 1;
  } else {
    op->cursor = next;
  }
  Step(op);
}

}  // namespace shardkv::cluster
