#include "cluster/coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster/wire_envelope.h"
#include "common/hlc.h"

namespace shardkv::cluster {
namespace {

std::string Describe(const ClusterNode& node, const Status& s) {
  return "node " + std::to_string(node.id) + " (" + s.message() + ")";
}

}  // namespace

// Joint writes (design.md "Rebalancing: the transition protocol"): while a change is pending a
// write goes to O and N and needs `required_old` acks from O and `required_new` from N. Without a
// change N is empty.
struct Coordinator::WriteOp {
  std::shared_ptr<const ClusterMap> map;
  uint64_t token = 0;
  std::string key;
  storage::Envelope envelope;
  net::Consistency consistency = net::Consistency::kDefault;
  std::vector<uint32_t> old_set;
  std::vector<uint32_t> new_set;
  uint32_t required_old = 0;
  uint32_t required_new = 0;
  size_t total = 0;
  int redrives = 0;
  int restamps = 0;
  uint64_t restamp_until_ms = 0;  // wall-clock ms; past it a superseded write is not re-stamped
  WriteDone done;

  common::Mutex mu;
  size_t superseded GUARDED_BY(mu) = 0;  // replicas that hold a newer version
  uint64_t newer_ts GUARDED_BY(mu) = 0;  // the highest of their clocks
  size_t acks_old GUARDED_BY(mu) = 0;
  size_t acks_new GUARDED_BY(mu) = 0;
  size_t replies GUARDED_BY(mu) = 0;
  bool answered GUARDED_BY(mu) = false;
  bool stale GUARDED_BY(mu) = false;  // a replica answered at a newer epoch
  // Hints wait for the outcome: only an acknowledged write is handed off (a write reported as
  // failed must never later win over an acknowledged one: issue 12, scenario 3).
  bool acked GUARDED_BY(mu) = false;
  std::vector<ClusterNode> pending_hints GUARDED_BY(mu);
  std::string failures GUARDED_BY(mu);
};

struct Coordinator::ReadOp {
  std::shared_ptr<const ClusterMap> map;
  uint64_t token = 0;
  std::string key;
  net::Consistency consistency = net::Consistency::kDefault;
  uint32_t required = 0;
  size_t total = 0;
  int redrives = 0;
  ReadDone done;

  common::Mutex mu;
  size_t replies GUARDED_BY(mu) = 0;
  size_t answers GUARDED_BY(mu) = 0;  // replies that carried a result
  bool answered GUARDED_BY(mu) = false;
  bool stale GUARDED_BY(mu) = false;
  std::string failures GUARDED_BY(mu);
  std::optional<storage::Envelope> newest GUARDED_BY(mu);
  // Each replica's answer, for read repair once all are in; the nodes point into `map`. Empty
  // when the read has a single replica: there is nothing to repair then, so nothing is copied.
  std::vector<std::pair<const ClusterNode*, std::optional<storage::Envelope>>> results
      GUARDED_BY(mu);
};

namespace {
constexpr int kMaxRedrives = 3;
constexpr int kMaxRestamps = 3;

// `e` with every register it writes given version `v`: an expiry register of (0,0) (KEEPTTL, "no
// opinion") stays so, and an absent value register stays absent.
storage::Envelope Restamped(storage::Envelope e, storage::Version v) {
  const bool own_expiry = e.explicit_expiry && (e.expiry_timestamp != 0 || e.expiry_node_id != 0);
  if (!e.value_absent) {
    e.timestamp = v.timestamp;
    e.node_id = v.node_id;
  }
  if (own_expiry) {
    e.expiry_timestamp = v.timestamp;
    e.expiry_node_id = v.node_id;
  }
  return e;
}
bool In(const std::vector<uint32_t>& v, uint32_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}
}  // namespace

Coordinator::Coordinator(CoordinatorOptions options, storage::Storage* storage, MapStore* maps,
                         net::PeerPool* peers, HintStore* hints)
    : options_(options), storage_(storage), maps_(maps), peers_(peers), hints_(hints) {}

uint32_t Coordinator::Required(const ClusterMap& map, net::Consistency c, bool write,
                               size_t set_size, bool new_set) const {
  const auto n = static_cast<uint32_t>(set_size);
  switch (c) {
    case net::Consistency::kOne:
      return std::min<uint32_t>(1, n);
    case net::Consistency::kAll:
      return n;
    default:
      return std::min(write ? map.WriteQuorum(new_set) : map.ReadQuorum(), n);
  }
}

std::shared_ptr<const ClusterMap> Coordinator::NewerMap(const ClusterMap& than) const {
  auto current = maps_->Current();
  if (current && current->epoch() > than.epoch()) return current;
  return nullptr;
}

void Coordinator::BeginOp(uint64_t epoch) {
  common::MutexLock lock(&mu_);
  ++in_flight_by_epoch_[epoch];
}

void Coordinator::EndOp(uint64_t epoch) {
  common::MutexLock lock(&mu_);
  auto it = in_flight_by_epoch_.find(epoch);
  if (it != in_flight_by_epoch_.end() && --it->second == 0) in_flight_by_epoch_.erase(it);
  drained_.notify_all();
}

bool Coordinator::WaitForOlderEpochs(uint64_t epoch,
                                     std::chrono::steady_clock::time_point deadline) {
  common::MutexLock lock(&mu_);
  auto drained = [&]() REQUIRES(mu_) {
    return in_flight_by_epoch_.empty() || in_flight_by_epoch_.begin()->first >= epoch;
  };
  while (!drained()) {
    if (!lock.WaitUntil(drained_, deadline)) return drained();
  }
  return true;
}

CoordinatorStats Coordinator::stats() const {
  common::MutexLock lock(&mu_);
  return stats_;
}

void Coordinator::NoteReply(const net::Response& reply) {
  auto installed = maps_->InstallIfNewer(reply.epoch, reply.cluster_map);
  if (!installed.ok()) {
    spdlog::debug("map from a peer not installed: {}", installed.status().ToString());
  }
}

std::chrono::milliseconds Coordinator::ReplicaWriteTimeout(size_t bytes) const {
  // A replica copy of a large value needs time in proportion to its size (the transfer, the
  // replica's WAL, and fresh memory on the way): one replica timeout per started 4 MiB, so a
  // 16 MiB value gets five. With the plain timeout, copies of 16 MiB values timed out on an idle
  // local cluster and the writes failed for want of a quorum.
  constexpr size_t kBytesPerTimeout = size_t{4} << 20;
  return options_.replica_timeout * static_cast<int64_t>(1 + bytes / kBytesPerTimeout);
}

void Coordinator::SendReplicaWrite(const ClusterNode& node, uint64_t epoch, uint64_t token,
                                   const std::string& key, const storage::Envelope& envelope,
                                   std::function<void(Status)> done) {
  SendReplicaWriteAt(node, epoch, token, key, envelope,
                     [done = std::move(done)](ReplicaWriteReply r) { done(std::move(r.status)); });
}

void Coordinator::SendReplicaWriteAt(const ClusterNode& node, uint64_t epoch, uint64_t token,
                                     const std::string& key, const storage::Envelope& envelope,
                                     std::function<void(ReplicaWriteReply)> done) {
  net::Request req;
  auto current = maps_->Current();
  req.epoch = epoch;
  req.cluster_id = current ? current->cluster_id() : 0;
  const std::chrono::milliseconds timeout = ReplicaWriteTimeout(key.size() + envelope.value.size());
  if (options_.clock_agrees && options_.clock_agrees(node.id)) {
    req.deadline_ms = common::HlcClock::WallClockMs() + static_cast<uint64_t>(timeout.count());
  }
  req.body = net::ReplicaWriteRequest{token,
                                      key,
                                      envelope.timestamp,
                                      envelope.node_id,
                                      envelope.tombstone,
                                      envelope.value,
                                      ExpiryToWire(envelope)};
  auto self = shared_from_this();
  peers_->Call(node.address, std::move(req), timeout,
               [self, done = std::move(done)](StatusOr<net::Response> reply) {
                 if (!reply.ok()) return done(ReplicaWriteReply{reply.status()});
                 self->NoteReply(*reply);
                 if (reply->status().code() == Status::Code::kStaleEpoch) {
                   common::MutexLock lock(&self->mu_);
                   ++self->stats_.stale_epoch_replies;
                 }
                 ReplicaWriteReply r{reply->status(), reply->epoch, false, reply->ts};
                 if (const auto* w = std::get_if<net::ReplicaWriteResponse>(&reply->body)) {
                   r.superseded =
                       w->outcome == static_cast<uint8_t>(storage::WriteOutcome::kSuperseded);
                 }
                 done(std::move(r));
               });
}

void Coordinator::Write(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
                        std::optional<std::string> value, net::Consistency consistency,
                        WriteDone done) {
  WriteSpec spec;
  if (value.has_value()) {
    spec.value = std::move(*value);
  } else {
    spec.kind = WriteSpec::Kind::kDelete;
  }
  Write(std::move(map), token, std::move(key), std::move(spec), consistency, std::move(done));
}

void Coordinator::Write(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
                        WriteSpec spec, net::Consistency consistency, WriteDone done) {
  // A batch of one, so that it shares group commit with the writes of other clients.
  std::vector<BatchWrite> writes;
  writes.push_back(BatchWrite{token, std::move(key), std::move(spec), std::move(done)});
  WriteMany(std::move(map), std::move(writes), consistency);
}

void Coordinator::WriteBatchNow(std::shared_ptr<const ClusterMap> map,
                                std::vector<BatchWrite> writes, net::Consistency consistency) {
  std::vector<std::shared_ptr<WriteOp>> local;
  local.reserve(writes.size());
  // Each peer gets the copies it holds in one replicaWriteBatch frame (applied there in one
  // storage batch too); a peer with one copy gets a plain replicaWrite.
  std::map<uint32_t, std::vector<std::shared_ptr<WriteOp>>> by_peer;
  std::vector<uint32_t> remote;
  for (BatchWrite& w : writes) {
    auto op = MakeWriteOp(map, w.token, std::move(w.key), std::move(w.spec), consistency,
                          std::move(w.done));
    bool is_local = false;
    if (op == nullptr || !PrepareWrite(op, &remote, &is_local)) continue;
    for (uint32_t id : remote) by_peer[id].push_back(op);
    if (is_local) local.push_back(std::move(op));
  }
  for (auto& [id, ops] : by_peer) {
    const ClusterNode node = *map->FindNode(id);
    if (ops.size() == 1) {
      const std::shared_ptr<WriteOp>& op = ops[0];
      SendReplicaWriteAt(node, map->epoch(), op->token, op->key, op->envelope,
                         [self = shared_from_this(), op, node](ReplicaWriteReply r) {
                           self->FinishReplicaWrite(op, node, std::move(r));
                         });
    } else {
      SendReplicaWriteBatch(node, map->epoch(), std::move(ops));
    }
  }
  if (local.empty()) return;
  if (local.size() == 1) {
    // One copy here: Write() reads the envelope in place (a 16 MiB value is not copied into a
    // batch entry first).
    const std::shared_ptr<WriteOp>& op = local[0];
    FinishLocalWrite(op, storage_->Write(op->token, op->key, op->envelope));
    return;
  }
  std::vector<storage::RangeEntry> entries;
  entries.reserve(local.size());
  for (const auto& op : local) entries.push_back({op->token, op->key, op->envelope});
  std::vector<StatusOr<storage::WriteResult>> results = storage_->WriteMany(entries);
  for (size_t i = 0; i < local.size(); ++i) FinishLocalWrite(local[i], std::move(results[i]));
}

std::shared_ptr<Coordinator::WriteOp> Coordinator::MakeWriteOp(
    std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key, WriteSpec spec,
    net::Consistency consistency, WriteDone done) {
  auto ts = storage_->clock().Now();
  if (!ts.ok()) {
    done(ts.status());
    return nullptr;
  }
  auto op = std::make_shared<WriteOp>();
  const storage::Version version{*ts, options_.self_id};
  switch (spec.kind) {
    case WriteSpec::Kind::kPut:
      if (spec.keep_ttl) {
        op->envelope = storage::Envelope::ValueOnly(version, std::move(spec.value));
      } else {
        const uint64_t expires_at = spec.ttl_ms == 0 ? 0 : storage_->WallClockMs() + spec.ttl_ms;
        op->envelope = storage::Envelope::Plain(version, false, std::move(spec.value), expires_at);
      }
      break;
    case WriteSpec::Kind::kDelete:
      op->envelope = storage::Envelope::Plain(version, true, "");
      break;
    case WriteSpec::Kind::kExpire:
      op->envelope = storage::Envelope::ExpiryOnly(version, spec.expires_at_ms);
      break;
    case WriteSpec::Kind::kMerge:
      op->envelope = std::move(spec.record);
      op->restamps = kMaxRestamps;  // a superseded reply counts: see WriteSpec::Kind::kMerge
      break;
  }
  // A write is re-stamped only while its client still waits: a coordinator that was paused
  // (SIGSTOP) and resumes with the write in flight must not give an old value a new timestamp
  // above what was acknowledged meanwhile (seen in the SIGSTOP drill). Without a deadline (RESP,
  // batches) the bound is one replica timeout after the first stamp.
  op->restamp_until_ms = spec.deadline_ms != 0
                             ? spec.deadline_ms
                             : common::HlcClock::PhysicalMs(*ts) +
                                   static_cast<uint64_t>(options_.replica_timeout.count());
  op->token = token;
  op->key = std::move(key);
  op->consistency = consistency;
  op->done = std::move(done);
  op->map = std::move(map);
  return op;
}

void Coordinator::StartWrite(const std::shared_ptr<WriteOp>& op) {
  if (SendWrite(op)) FinishLocalWrite(op, storage_->Write(op->token, op->key, op->envelope));
}

bool Coordinator::SendWrite(const std::shared_ptr<WriteOp>& op) {
  std::vector<uint32_t> remote;
  bool local_replica = false;
  if (!PrepareWrite(op, &remote, &local_replica)) return false;
  // The peers' copies go out first and the local write (a WAL append and sync) runs while they
  // travel: written the other way round, a 16 MiB value paid for the local disk and the network
  // one after the other and came close to the client's timeout.
  for (uint32_t id : remote) {
    const ClusterNode node = *op->map->FindNode(id);
    SendReplicaWriteAt(node, op->map->epoch(), op->token, op->key, op->envelope,
                       [self = shared_from_this(), op, node](ReplicaWriteReply r) {
                         self->FinishReplicaWrite(op, node, std::move(r));
                       });
  }
  return local_replica;
}

bool Coordinator::PrepareWrite(const std::shared_ptr<WriteOp>& op, std::vector<uint32_t>* remote,
                               bool* local_replica) {
  op->map->WriteReplicas(op->token, &op->old_set, &op->new_set);
  std::vector<uint32_t> targets = op->old_set;
  for (uint32_t id : op->new_set) {
    if (!In(targets, id)) targets.push_back(id);
  }
  op->required_old = Required(*op->map, op->consistency, true, op->old_set.size(), false);
  op->required_new =
      op->new_set.empty() ? 0 : Required(*op->map, op->consistency, true, op->new_set.size(), true);
  op->total = targets.size();
  if (op->total == 0) {
    op->done(Status::Internal("the cluster map places no replica"));
    return false;
  }
  BeginOp(op->map->epoch());
  remote->clear();
  *local_replica = false;
  for (uint32_t id : targets) {
    if (id == options_.self_id) {
      *local_replica = true;
    } else {
      remote->push_back(id);
    }
  }
  return true;
}

void Coordinator::SendReplicaWriteBatch(const ClusterNode& node, uint64_t epoch,
                                        std::vector<std::shared_ptr<WriteOp>> ops) {
  net::Request req;
  auto current = maps_->Current();
  req.epoch = epoch;
  req.cluster_id = current ? current->cluster_id() : 0;
  net::ReplicaWriteBatchRequest batch;
  batch.writes.reserve(ops.size());
  size_t bytes = 0;
  for (const auto& op : ops) {
    const storage::Envelope& e = op->envelope;
    batch.writes.push_back(net::ReplicaWriteRequest{op->token, op->key, e.timestamp, e.node_id,
                                                    e.tombstone, e.value, ExpiryToWire(e)});
    bytes += op->key.size() + e.value.size();
  }
  const std::chrono::milliseconds timeout = ReplicaWriteTimeout(bytes);
  if (options_.clock_agrees && options_.clock_agrees(node.id)) {
    req.deadline_ms = common::HlcClock::WallClockMs() + static_cast<uint64_t>(timeout.count());
  }
  req.body = std::move(batch);
  auto self = shared_from_this();
  peers_->Call(node.address, std::move(req), timeout,
               [self, node, epoch, ops = std::move(ops)](StatusOr<net::Response> reply) {
                 if (!reply.ok()) {
                   for (const auto& op : ops) self->FinishReplicaWrite(op, node, {reply.status()});
                   return;
                 }
                 self->NoteReply(*reply);
                 const auto* batch = std::get_if<net::ReplicaWriteBatchResponse>(&reply->body);
                 if (batch == nullptr || batch->results.size() != ops.size()) {
                   Status failed = reply->status();
                   if (failed.code() == Status::Code::kNotSupported) {
                     // A node of an older release does not know the batch: one replicaWrite each.
                     for (const auto& op : ops) {
                       self->SendReplicaWriteAt(node, epoch, op->token, op->key, op->envelope,
                                                [self, op, node](ReplicaWriteReply r) {
                                                  self->FinishReplicaWrite(op, node, std::move(r));
                                                });
                     }
                     return;
                   }
                   if (failed.code() == Status::Code::kStaleEpoch) {
                     common::MutexLock lock(&self->mu_);
                     ++self->stats_.stale_epoch_replies;
                   }
                   if (failed.ok())
                     failed = Status::Internal("a replica batch reply of the wrong shape");
                   for (const auto& op : ops) {
                     self->FinishReplicaWrite(op, node, {failed, reply->epoch, false, reply->ts});
                   }
                   return;
                 }
                 for (size_t i = 0; i < ops.size(); ++i) {
                   const net::ReplicaWriteResult& res = batch->results[i];
                   if (res.status.code() == Status::Code::kStaleEpoch) {
                     common::MutexLock lock(&self->mu_);
                     ++self->stats_.stale_epoch_replies;
                   }
                   ReplicaWriteReply r{res.status, reply->epoch, false, reply->ts};
                   r.superseded =
                       res.status.ok() &&
                       res.outcome == static_cast<uint8_t>(storage::WriteOutcome::kSuperseded);
                   self->FinishReplicaWrite(ops[i], node, std::move(r));
                 }
               });
}

void Coordinator::FinishLocalWrite(const std::shared_ptr<WriteOp>& op,
                                   StatusOr<storage::WriteResult> local) {
  const ClusterNode self_node = *op->map->FindNode(options_.self_id);
  ReplicaWriteReply r{local.status(), op->map->epoch()};
  if (local.ok() && local->outcome == storage::WriteOutcome::kSuperseded) {
    r.superseded = true;
    r.ts = local->stored.timestamp;
  }
  FinishReplicaWrite(op, self_node, std::move(r));
}

void Coordinator::FinishReplicaWrite(const std::shared_ptr<WriteOp>& op, const ClusterNode& node,
                                     ReplicaWriteReply reply) {
  std::optional<StatusOr<uint64_t>> answer;
  std::shared_ptr<const ClusterMap> redrive;
  std::optional<uint64_t> restamp_above;
  std::vector<ClusterNode> hint_now;  // replicas to hint for, once this write is acknowledged
  size_t hints_dropped = 0;
  bool last = false;
  const Status& result = reply.status;
  const uint64_t reply_epoch = reply.epoch;
  const bool fenced = result.code() == Status::Code::kStaleEpoch;
  {
    common::MutexLock lock(&op->mu);
    ++op->replies;
    // After kMaxRestamps the write is racing other writers of the key, each re-stamped above
    // the last: concurrent writes, where LWW may keep either, so superseded replies count.
    if (result.ok() && reply_epoch <= op->map->epoch() && reply.superseded &&
        op->restamps < kMaxRestamps) {
      // The replica holds a newer version (a clock ahead of ours stamped it, or a write racing
      // this one): this write would lose there, so it is no ack. Before answering, the write is
      // re-stamped above it; a write acknowledged while a replica keeps a newer version could
      // be undone by it later (issue 12, "a later acknowledged write always wins"). Past
      // restamp_until_ms it is only no ack: the client stopped waiting (see Write).
      ++op->superseded;
      op->newer_ts = std::max(op->newer_ts, reply.ts);
      if (!op->failures.empty()) op->failures += ", ";
      op->failures += "node " + std::to_string(node.id) + " (holds a newer version)";
    } else if (result.ok() && reply_epoch <= op->map->epoch()) {
      if (In(op->old_set, node.id)) ++op->acks_old;
      if (In(op->new_set, node.id)) ++op->acks_new;
    } else if (result.ok() || fenced) {
      // Fencing: only acks given at the op's own epoch count; a newer epoch means the write
      // must be re-driven under the newer map (same timestamp, so it stays idempotent).
      op->stale = true;
    } else {
      if (!op->failures.empty()) op->failures += ", ";
      op->failures += Describe(node, result);
    }
    if (!result.ok() && !fenced && node.id != options_.self_id) {
      if (!op->answered) {
        op->pending_hints.push_back(node);
      } else if (op->acked) {
        hint_now.push_back(node);
      } else {
        ++hints_dropped;
      }
    }
    last = op->replies == op->total;
    if (!op->answered && op->superseded > 0 &&
        common::HlcClock::WallClockMs() <= op->restamp_until_ms) {
      op->answered = true;  // this attempt's answer is the re-stamped write's
      restamp_above = op->newer_ts;
    } else if (!op->answered && op->acks_old >= op->required_old &&
               op->acks_new >= op->required_new) {
      op->answered = true;
      op->acked = true;
      answer = op->envelope.newest_version().timestamp;
    } else if (!op->answered && last) {
      op->answered = true;
      if (op->stale && op->redrives < kMaxRedrives) redrive = NewerMap(*op->map);
      if (!redrive) {
        std::string need = std::to_string(op->acks_old) + " of " +
                           std::to_string(op->required_old) + " required acks";
        if (op->required_new > 0) {
          need += " from the old replicas and " + std::to_string(op->acks_new) + " of " +
                  std::to_string(op->required_new) + " from the new ones";
        }
        answer = Status(Status::Code::kUnavailable, Status::Reason::kQuorumMissed,
                        "write quorum not reached: " + need + "; unavailable replicas: " +
                            (op->failures.empty() ? "none (stale epoch)" : op->failures));
      }
    }
  }
  {
    common::MutexLock lock(&op->mu);
    if (op->answered && !op->pending_hints.empty()) {
      // Decided: an acknowledged write hands its misses off; a failed, superseded or re-driven
      // attempt's are dropped (the re-stamped or re-driven attempt hints its own).
      if (op->acked) {
        hint_now.insert(hint_now.end(), op->pending_hints.begin(), op->pending_hints.end());
      } else {
        hints_dropped += op->pending_hints.size();
      }
      op->pending_hints.clear();
    }
  }
  if (restamp_above) Restamp(op, *restamp_above);
  for (const ClusterNode& missed : hint_now) {
    // The replica missed an acknowledged write: keep it for hinted handoff (repair only).
    Status s = hints_->Add(missed.id, op->token, op->key, op->envelope);
    common::MutexLock lock(&mu_);
    if (s.ok()) ++stats_.hints_written;
  }
  if (hints_dropped > 0) {
    common::MutexLock lock(&mu_);
    stats_.hints_not_written += hints_dropped;
  }
  if (answer) {
    if (!answer->ok()) {
      common::MutexLock lock(&mu_);
      ++stats_.quorum_failures;
    }
    op->done(std::move(*answer));
  }
  if (last) EndOp(op->map->epoch());
  if (redrive) {
    {
      common::MutexLock lock(&mu_);
      ++stats_.redriven;
    }
    auto again = std::make_shared<WriteOp>();
    again->map = std::move(redrive);
    again->token = op->token;
    again->key = op->key;
    again->envelope = op->envelope;
    again->consistency = op->consistency;
    again->redrives = op->redrives + 1;
    again->restamps = op->restamps;
    again->restamp_until_ms = op->restamp_until_ms;
    again->done = op->done;
    StartWrite(again);
  }
}

void Coordinator::Restamp(const std::shared_ptr<WriteOp>& op, uint64_t newer_ts) {
  // Past the newest version a replica reported, so the re-stamped write wins there. A version
  // too far ahead of this node's clock is refused by the clock (max_clock_offset): the write
  // then fails, not applied anywhere that holds the newer version.
  Status moved = storage_->clock().Update(newer_ts);
  StatusOr<uint64_t> ts = moved.ok() ? storage_->clock().Now() : StatusOr<uint64_t>(moved);
  if (!ts.ok()) {
    {
      common::MutexLock lock(&mu_);
      ++stats_.quorum_failures;
    }
    return op->done(Status(Status::Code::kUnavailable, Status::Reason::kNotApplied,
                           "write not applied: a replica holds a newer version of the key whose "
                           "timestamp this node cannot pass (" +
                               ts.status().message() + ")"));
  }
  {
    common::MutexLock lock(&mu_);
    ++stats_.restamped;
  }
  spdlog::debug("write of a key re-stamped above {} (attempt {})", newer_ts, op->restamps + 1);
  auto again = std::make_shared<WriteOp>();
  again->map = NewerMap(*op->map);
  if (!again->map) again->map = op->map;
  again->token = op->token;
  again->key = op->key;
  again->envelope = Restamped(op->envelope, storage::Version{*ts, options_.self_id});
  again->consistency = op->consistency;
  again->redrives = op->redrives;
  again->restamps = op->restamps + 1;
  again->restamp_until_ms = op->restamp_until_ms;
  again->done = op->done;
  StartWrite(again);
}

void Coordinator::Read(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
                       net::Consistency consistency, ReadDone done) {
  auto op = std::make_shared<ReadOp>();
  op->token = token;
  op->key = std::move(key);
  op->consistency = consistency;
  op->done = std::move(done);
  op->map = std::move(map);
  StartRead(op);
}

void Coordinator::StartRead(const std::shared_ptr<ReadOp>& op) {
  const std::vector<uint32_t> replicas = op->map->ReadReplicas(op->token);
  op->required = Required(*op->map, op->consistency, false, replicas.size(), false);
  op->total = replicas.size();
  if (op->total == 0) return op->done(Status::Internal("the cluster map places no replica"));
  BeginOp(op->map->epoch());
  for (uint32_t id : replicas) {
    // A reference into op->map, which the op keeps alive: no copy of the node per read.
    const ClusterNode& node = *op->map->FindNode(id);
    if (options_.read_refusal) {
      // A replica that needs repair may hold values whose deletes were purged elsewhere: its
      // answer must neither count nor be merged (design.md "Needs repair").
      if (Status refused = options_.read_refusal(id); !refused.ok()) {
        FinishReplicaRead(op, node, refused, op->map->epoch());
        continue;
      }
    }
    if (id == options_.self_id) {
      auto local = storage_->GetEnvelope(op->token, op->key);
      const uint64_t epoch = op->map->epoch();
      if (local.ok()) {
        FinishReplicaRead(op, node, std::optional<storage::Envelope>(std::move(local).value()),
                          epoch);
      } else if (local.status().IsNotFound()) {
        FinishReplicaRead(op, node, std::optional<storage::Envelope>(), epoch);
      } else {
        FinishReplicaRead(op, node, local.status(), epoch);
      }
      continue;
    }
    net::Request req;
    req.epoch = op->map->epoch();
    req.cluster_id = op->map->cluster_id();
    req.body = net::ReplicaReadRequest{op->token, op->key};
    peers_->Call(node.address, std::move(req), options_.replica_timeout,
                 [self = shared_from_this(), op, &node](StatusOr<net::Response> reply) {
                   if (!reply.ok()) return self->FinishReplicaRead(op, node, reply.status(), 0);
                   self->NoteReply(*reply);
                   const uint64_t epoch = reply->epoch;
                   if (!reply->ok()) {
                     return self->FinishReplicaRead(op, node, reply->status(), epoch);
                   }
                   const auto* body = std::get_if<net::ReplicaReadResponse>(&reply->body);
                   if (body == nullptr) {
                     return self->FinishReplicaRead(
                         op, node, Status::Corruption("unexpected reply to a replica read"), epoch);
                   }
                   std::optional<storage::Envelope> env;
                   if (body->found) {
                     env = EnvelopeFromWire(body->ts, body->node_id, body->tombstone, body->value,
                                            body->expiry);
                   }
                   self->FinishReplicaRead(op, node, std::move(env), epoch);
                 });
  }
}

void Coordinator::FinishReplicaRead(const std::shared_ptr<ReadOp>& op, const ClusterNode& node,
                                    StatusOr<std::optional<storage::Envelope>> result,
                                    uint64_t reply_epoch) {
  std::optional<StatusOr<storage::Envelope>> answer;
  std::shared_ptr<const ClusterMap> redrive;
  bool last = false;
  const bool fenced = result.status().code() == Status::Code::kStaleEpoch;
  {
    common::MutexLock lock(&op->mu);
    ++op->replies;
    if (result.ok() && reply_epoch <= op->map->epoch()) {
      ++op->answers;
      std::optional<storage::Envelope>& env = *result;
      if (op->total == 1) {
        op->newest = std::move(env);  // the only answer: nothing to merge or repair
      } else {
        // Merge, never "pick the newest reply": one replica may hold the newest value and
        // another the newest expiry.
        if (env) op->newest = op->newest ? storage::Merge(*op->newest, *env) : *env;
        op->results.push_back({&node, std::move(env)});
      }
    } else if (result.ok() || fenced) {
      op->stale = true;  // answered at a newer epoch: re-read under that map if needed
    } else {
      if (!op->failures.empty()) op->failures += ", ";
      op->failures += Describe(node, result.status());
    }
    last = op->replies == op->total;
    if (!op->answered && op->answers >= op->required) {
      op->answered = true;
      if (op->newest && op->total == 1) {
        answer = std::move(*op->newest);  // RepairStale has no other reply to compare it with
        op->newest.reset();
      } else if (op->newest) {
        answer = *op->newest;
      } else {
        answer = Status::NotFound("not found");
      }
    } else if (!op->answered && last) {
      op->answered = true;
      if (op->stale && op->redrives < kMaxRedrives) redrive = NewerMap(*op->map);
      if (!redrive) {
        answer = Status::Unavailable("read quorum not reached: " + std::to_string(op->answers) +
                                     " of " + std::to_string(op->required) +
                                     " required replies; unavailable replicas: " +
                                     (op->failures.empty() ? "none (stale epoch)" : op->failures));
      }
    }
  }
  if (answer) {
    if (!answer->ok() && !answer->status().IsNotFound()) {
      common::MutexLock lock(&mu_);
      ++stats_.quorum_failures;
    }
    op->done(std::move(*answer));
  }
  if (last) {
    RepairStale(op);
    EndOp(op->map->epoch());
  }
  if (redrive) {
    {
      common::MutexLock lock(&mu_);
      ++stats_.redriven;
    }
    auto again = std::make_shared<ReadOp>();
    again->map = std::move(redrive);
    again->token = op->token;
    again->key = op->key;
    again->consistency = op->consistency;
    again->redrives = op->redrives + 1;
    again->done = op->done;
    StartRead(again);
  }
}

void Coordinator::RepairStale(const std::shared_ptr<ReadOp>& op) {
  // Runs once every replica has answered, so all results are in and no lock is contended.
  common::MutexLock lock(&op->mu);
  if (!op->newest) return;
  for (const auto& [node, env] : op->results) {
    // op->newest is the merge of every reply, so a reply equal to it lacks nothing.
    if (env && *env == *op->newest) continue;
    {
      common::MutexLock stats_lock(&mu_);
      ++stats_.read_repairs;
    }
    if (node->id == options_.self_id) {
      Status s = storage_->Write(op->token, op->key, *op->newest).status();
      if (!s.ok()) spdlog::warn("read repair of a local key failed: {}", s.ToString());
      continue;
    }
    SendReplicaWrite(*node, op->map->epoch(), op->token, op->key, *op->newest, [](Status) {});
  }
}

}  // namespace shardkv::cluster
