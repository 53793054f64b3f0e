#include "cluster/coordinator.h"

#include <spdlog/spdlog.h>

namespace shardkv {
namespace {

bool Newer(const Envelope& a, const Envelope& b) { return a.version() > b.version(); }

std::string Describe(const ClusterNode& node, const Status& s) {
  return "node " + std::to_string(node.id) + " (" + s.message() + ")";
}

}  // namespace

struct Coordinator::WriteOp {
  std::shared_ptr<const ClusterMap> map;
  uint64_t token = 0;
  std::string key;
  Envelope envelope;
  uint32_t required = 0;
  size_t total = 0;
  WriteDone done;

  std::mutex mu;
  size_t acks = 0;        // GUARDED_BY(mu)
  size_t replies = 0;     // GUARDED_BY(mu)
  bool answered = false;  // GUARDED_BY(mu)
  std::string failures;   // GUARDED_BY(mu)
};

struct Coordinator::ReadOp {
  std::shared_ptr<const ClusterMap> map;
  uint64_t token = 0;
  std::string key;
  uint32_t required = 0;
  size_t total = 0;
  ReadDone done;

  std::mutex mu;
  size_t replies = 0;              // GUARDED_BY(mu)
  size_t answers = 0;              // GUARDED_BY(mu): replies that carried a result
  bool answered = false;           // GUARDED_BY(mu)
  std::string failures;            // GUARDED_BY(mu)
  std::optional<Envelope> newest;  // GUARDED_BY(mu)
  std::vector<std::pair<ClusterNode, std::optional<Envelope>>> results;  // GUARDED_BY(mu)
};

Coordinator::Coordinator(CoordinatorOptions options, Storage* storage, MapStore* maps,
                         PeerPool* peers, HintStore* hints)
    : options_(options), storage_(storage), maps_(maps), peers_(peers), hints_(hints) {}

uint32_t Coordinator::Required(const ClusterMap& map, net::Consistency c, bool write) const {
  switch (c) {
    case net::Consistency::kOne:
      return 1;
    case net::Consistency::kAll:
      return map.EffectiveReplicas();
    default:
      return write ? map.EffectiveWriteQuorum() : map.EffectiveReadQuorum();
  }
}

void Coordinator::BeginOp(uint64_t epoch) {
  std::lock_guard lock(mu_);
  ++in_flight_by_epoch_[epoch];
}

void Coordinator::EndOp(uint64_t epoch) {
  std::lock_guard lock(mu_);
  auto it = in_flight_by_epoch_.find(epoch);
  if (it != in_flight_by_epoch_.end() && --it->second == 0) in_flight_by_epoch_.erase(it);
  drained_.notify_all();
}

bool Coordinator::WaitForOlderEpochs(uint64_t epoch,
                                     std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return drained_.wait_until(lock, deadline, [&] {
    return in_flight_by_epoch_.empty() || in_flight_by_epoch_.begin()->first >= epoch;
  });
}

CoordinatorStats Coordinator::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Coordinator::NoteReply(const net::Response& reply) {
  if (reply.cluster_map.empty()) return;
  auto map = ClusterMap::Decode(reply.cluster_map);
  if (!map.ok()) return;
  Status s = maps_->Install(*map);
  if (!s.ok()) spdlog::debug("map from a peer not installed: {}", s.ToString());
}

void Coordinator::SendReplicaWrite(const ClusterNode& node, uint64_t epoch, uint64_t token,
                                   const std::string& key, const Envelope& envelope,
                                   std::function<void(Status)> done) {
  net::Request req;
  auto current = maps_->Current();
  req.epoch = epoch;
  req.cluster_id = current ? current->cluster_id() : 0;
  req.body = net::ReplicaWriteRequest{
      token, key, envelope.timestamp, envelope.node_id, envelope.tombstone, envelope.value};
  auto self = shared_from_this();
  peers_->Call(node.address, std::move(req), options_.replica_timeout,
               [self, done = std::move(done)](StatusOr<net::Response> reply) {
                 if (!reply.ok()) return done(reply.status());
                 self->NoteReply(*reply);
                 if (reply->status().code() == Status::Code::kStaleEpoch) {
                   std::lock_guard lock(self->mu_);
                   ++self->stats_.stale_epoch_replies;
                 }
                 done(reply->status());
               });
}

void Coordinator::Write(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
                        std::optional<std::string> value, net::Consistency consistency,
                        WriteDone done) {
  auto ts = storage_->clock().Now();
  if (!ts.ok()) return done(ts.status());
  auto op = std::make_shared<WriteOp>();
  op->envelope = Envelope{*ts, options_.self_id, !value.has_value(), value.value_or("")};
  op->token = token;
  op->key = std::move(key);
  op->required = Required(*map, consistency, true);
  op->done = std::move(done);
  const std::vector<uint32_t> replicas = map->Replicas(token);
  op->total = replicas.size();
  op->map = std::move(map);
  if (op->total == 0) return op->done(Status::Internal("the cluster map places no replica"));
  BeginOp(op->map->epoch());
  for (uint32_t id : replicas) {
    const ClusterNode node = *op->map->FindNode(id);
    if (id == options_.self_id) {
      auto local = storage_->Write(op->token, op->key, op->envelope);
      FinishReplicaWrite(op, node, local.status());
      continue;
    }
    SendReplicaWrite(node, op->map->epoch(), op->token, op->key, op->envelope,
                     [self = shared_from_this(), op, node](Status s) {
                       self->FinishReplicaWrite(op, node, std::move(s));
                     });
  }
}

void Coordinator::FinishReplicaWrite(const std::shared_ptr<WriteOp>& op, const ClusterNode& node,
                                     Status result) {
  std::optional<StatusOr<uint64_t>> answer;
  bool last = false;
  {
    std::lock_guard lock(op->mu);
    ++op->replies;
    if (result.ok()) {
      ++op->acks;
    } else {
      if (!op->failures.empty()) op->failures += ", ";
      op->failures += Describe(node, result);
    }
    if (!op->answered && op->acks >= op->required) {
      op->answered = true;
      answer = op->envelope.timestamp;
    } else if (!op->answered && op->replies == op->total) {
      op->answered = true;
      answer = Status::Unavailable("write quorum not reached: " + std::to_string(op->acks) +
                                   " of " + std::to_string(op->required) +
                                   " required acks; unavailable replicas: " + op->failures);
    }
    last = op->replies == op->total;
  }
  if (!result.ok() && node.id != options_.self_id) {
    // The replica missed this write: keep it for hinted handoff (repair only, never an ack).
    Status s = hints_->Add(node.id, op->token, op->key, op->envelope);
    std::lock_guard lock(mu_);
    if (s.ok()) ++stats_.hints_written;
  }
  if (answer) {
    if (!answer->ok()) {
      std::lock_guard lock(mu_);
      ++stats_.quorum_failures;
    }
    op->done(std::move(*answer));
  }
  if (last) EndOp(op->map->epoch());
}

void Coordinator::Read(std::shared_ptr<const ClusterMap> map, uint64_t token, std::string key,
                       net::Consistency consistency, ReadDone done) {
  auto op = std::make_shared<ReadOp>();
  op->token = token;
  op->key = std::move(key);
  op->required = Required(*map, consistency, false);
  op->done = std::move(done);
  const std::vector<uint32_t> replicas = map->Replicas(token);
  op->total = replicas.size();
  op->map = std::move(map);
  if (op->total == 0) return op->done(Status::Internal("the cluster map places no replica"));
  BeginOp(op->map->epoch());
  for (uint32_t id : replicas) {
    const ClusterNode node = *op->map->FindNode(id);
    if (id == options_.self_id) {
      auto local = storage_->GetEnvelope(op->token, op->key);
      if (local.ok()) {
        FinishReplicaRead(op, node, std::optional<Envelope>(std::move(local).value()));
      } else if (local.status().IsNotFound()) {
        FinishReplicaRead(op, node, std::optional<Envelope>());
      } else {
        FinishReplicaRead(op, node, local.status());
      }
      continue;
    }
    net::Request req;
    req.epoch = op->map->epoch();
    req.cluster_id = op->map->cluster_id();
    req.body = net::ReplicaReadRequest{op->token, op->key};
    peers_->Call(node.address, std::move(req), options_.replica_timeout,
                 [self = shared_from_this(), op, node](StatusOr<net::Response> reply) {
                   if (!reply.ok()) return self->FinishReplicaRead(op, node, reply.status());
                   self->NoteReply(*reply);
                   if (!reply->ok()) return self->FinishReplicaRead(op, node, reply->status());
                   const auto* body = std::get_if<net::ReplicaReadResponse>(&reply->body);
                   if (body == nullptr) {
                     return self->FinishReplicaRead(
                         op, node, Status::Corruption("unexpected reply to a replica read"));
                   }
                   std::optional<Envelope> env;
                   if (body->found) {
                     env = Envelope{body->ts, body->node_id, body->tombstone, body->value};
                   }
                   self->FinishReplicaRead(op, node, std::move(env));
                 });
  }
}

void Coordinator::FinishReplicaRead(const std::shared_ptr<ReadOp>& op, const ClusterNode& node,
                                    StatusOr<std::optional<Envelope>> result) {
  std::optional<StatusOr<Envelope>> answer;
  bool last = false;
  {
    std::lock_guard lock(op->mu);
    ++op->replies;
    if (result.ok()) {
      ++op->answers;
      const std::optional<Envelope>& env = *result;
      if (env && (!op->newest || Newer(*env, *op->newest))) op->newest = env;
      op->results.push_back({node, *result});
    } else {
      if (!op->failures.empty()) op->failures += ", ";
      op->failures += Describe(node, result.status());
    }
    if (!op->answered && op->answers >= op->required) {
      op->answered = true;
      if (op->newest) {
        answer = *op->newest;
      } else {
        answer = Status::NotFound("not found");
      }
    } else if (!op->answered && op->replies == op->total) {
      op->answered = true;
      answer = Status::Unavailable("read quorum not reached: " + std::to_string(op->answers) +
                                   " of " + std::to_string(op->required) +
                                   " required replies; unavailable replicas: " + op->failures);
    }
    last = op->replies == op->total;
  }
  if (answer) {
    if (!answer->ok() && !answer->status().IsNotFound()) {
      std::lock_guard lock(mu_);
      ++stats_.quorum_failures;
    }
    op->done(std::move(*answer));
  }
  if (last) {
    RepairStale(op);
    EndOp(op->map->epoch());
  }
}

void Coordinator::RepairStale(const std::shared_ptr<ReadOp>& op) {
  // Runs once every replica has answered, so all results are in and no lock is contended.
  std::lock_guard lock(op->mu);
  if (!op->newest) return;
  for (const auto& [node, env] : op->results) {
    if (env && !Newer(*op->newest, *env)) continue;
    {
      std::lock_guard stats_lock(mu_);
      ++stats_.read_repairs;
    }
    if (node.id == options_.self_id) {
      Status s = storage_->Write(op->token, op->key, *op->newest).status();
      if (!s.ok()) spdlog::warn("read repair of a local key failed: {}", s.ToString());
      continue;
    }
    SendReplicaWrite(node, op->map->epoch(), op->token, op->key, *op->newest, [](Status) {});
  }
}

}  // namespace shardkv
