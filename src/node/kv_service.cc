#include "node/kv_service.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <type_traits>

#include "cluster/wire_envelope.h"
#include "common/hlc.h"
#include "node/storage_status.h"
#include "rebalance/repair_service.h"
#include "rebalance/stream_sink.h"
#include "rebalance/stream_source.h"
#include "shardkv/stats.h"
#include "storage/disk_space.h"

namespace shardkv::node {
namespace {

// Stats names per net::RequestBody alternative, in its order.
constexpr std::array<std::string_view, 21> kOpNames = {"ping",
                                                       "get",
                                                       "put",
                                                       "delete",
                                                       "multi_get",
                                                       "multi_put",
                                                       "stats",
                                                       "get_cluster_map",
                                                       "replica_write",
                                                       "replica_read",
                                                       "install_map",
                                                       "stream_scan",
                                                       "stream_range",
                                                       "count_ranges",
                                                       "admin",
                                                       "expire",
                                                       "scan",
                                                       "replica_scan",
                                                       "raft_message",
                                                       "anti_entropy",
                                                       "replica_write_batch"};
static_assert(std::variant_size_v<net::RequestBody> == kOpNames.size(),
              "name every request op for stats");

net::ResponseBody Error(const Status& s) { return net::ErrorResponse::Of(s); }

// A full disk reaches a client wrapped in whatever was being written when it struck ("persisting
// HLC ceiling: writing HLC ceiling: ..."): jargon that hides the one fact that matters. Cut it
// down to the storage's plain "no space left on device on node N". A quorum failure that names
// the full replica in parentheses keeps its whole message: it also says what else failed.
void PlainNoSpace(net::ResponseBody* body) {
  auto* e = std::get_if<net::ErrorResponse>(body);
  if (e == nullptr) return;
  const size_t at = e->message.find(storage::kNoSpaceMessage);
  if (at == 0 || at == std::string::npos) return;
  if (e->message.find('(') < at) return;
  e->message.erase(0, at);
}

// The client data operations: their failures are client errors, their deadlines are enforced
// (a late one is dropped, not run), and a full disk is reported plainly.
bool IsClientDataOp(const net::RequestBody& body) {
  return std::holds_alternative<net::GetRequest>(body) ||
         std::holds_alternative<net::PutRequest>(body) ||
         std::holds_alternative<net::DeleteRequest>(body) ||
         std::holds_alternative<net::MultiGetRequest>(body) ||
         std::holds_alternative<net::MultiPutRequest>(body) ||
         std::holds_alternative<net::ExpireRequest>(body) ||
         std::holds_alternative<net::ScanRequest>(body);
}

// The client operations that write: a node whose storage fails coordinates none of them.
bool IsClientWrite(const net::RequestBody& body) {
  return std::holds_alternative<net::PutRequest>(body) ||
         std::holds_alternative<net::DeleteRequest>(body) ||
         std::holds_alternative<net::MultiPutRequest>(body) ||
         std::holds_alternative<net::ExpireRequest>(body);
}

Status StatusOf(const net::ResponseBody& body) {
  if (const auto* e = std::get_if<net::ErrorResponse>(&body)) return e->ToStatus();
  return Status::OK();
}

// Joins the per-key results of a batch: calls `finish` once the last one arrives.
template <typename Result>
struct Gather {
  explicit Gather(size_t n, std::function<void(std::vector<Result>)> f)
      : results(n), remaining(n), finish(std::move(f)) {}
  void Set(size_t i, Result r) {
    results[i] = std::move(r);
    if (remaining.fetch_sub(1) == 1) finish(std::move(results));
  }
  std::vector<Result> results;
  std::atomic<size_t> remaining;
  std::function<void(std::vector<Result>)> finish;
};

// A replica write its coordinator stopped waiting for (deadline_ms, its wall clock): applying it
// now would land a version the client was told nothing about, long after (after a heal, writes
// queued in TCP arrived 19 s late). The coordinator counted it as a miss and hinted it.
std::optional<Status> LateReplicaWrite(uint64_t deadline_ms, uint64_t max_offset_ms,
                                       uint32_t self_id) {
  if (deadline_ms == 0) return std::nullopt;
  const uint64_t now_ms = common::HlcClock::WallClockMs();
  const uint64_t limit = deadline_ms + max_offset_ms + 100;
  if (now_ms < limit) return std::nullopt;
  return Status::Timeout("replica write reached node " + std::to_string(self_id) + " " +
                         std::to_string(now_ms - deadline_ms) +
                         " ms after its coordinator's deadline; dropped");
}

// A client op that reached this node (or waited here) past its client's deadline: the client
// stopped waiting and may have retried elsewhere, so running it now could stamp an old write above
// newer ones. Its deadline is in wall-clock ms (0: none).
std::optional<Status> LateDrop(uint64_t deadline_ms, uint32_t self_id) {
  if (deadline_ms == 0) return std::nullopt;
  const uint64_t now_ms = common::HlcClock::WallClockMs();
  // At the deadline is late: a request held for a newer map until its deadline (the wait ends
  // there, to the millisecond) must be dropped, not run (seen: the run-at-deadline race).
  if (now_ms < deadline_ms) return std::nullopt;
  return Status(Status::Code::kTimeout, Status::Reason::kLate,
                "request reached node " + std::to_string(self_id) + " " +
                    std::to_string(now_ms - deadline_ms) +
                    " ms after its client stopped waiting; dropped");
}

}  // namespace

std::string_view KvService::OpName(size_t op) {
  return op < kOpNames.size() ? kOpNames[op] : std::string_view();
}

Status KvService::CheckKey(std::string_view key) const {
  if (key.empty()) return Status::InvalidArgument("key is empty");
  if (key.size() > limits_.max_key_bytes) {
    return Status::InvalidArgument("key is " + std::to_string(key.size()) +
                                   " bytes; the limit is " + std::to_string(limits_.max_key_bytes));
  }
  return Status::OK();
}

Status KvService::CheckValue(std::string_view value) const {
  if (value.size() > limits_.max_value_bytes) {
    return Status::InvalidArgument("value is " + std::to_string(value.size()) +
                                   " bytes; the limit is " +
                                   std::to_string(limits_.max_value_bytes));
  }
  return Status::OK();
}

void KvService::Handle(net::Request request, std::function<void(net::Response)> done) {
  const auto start = std::chrono::steady_clock::now();
  const size_t op = request.body.index();
  const bool client_op = IsClientDataOp(request.body);
  std::shared_ptr<const ClusterMap> map = d_.maps->Current();
  const uint64_t request_epoch = request.epoch;
  // `relayed_ts`: the timestamp of the coordinator's reply to a request this node sent on.
  auto reply = [this, done = std::move(done), start, op, client_op, map, request_epoch,
                id = request.id](net::ResponseBody body,
                                 std::optional<uint64_t> relayed_ts = std::nullopt) {
    net::Response response;
    response.id = id;
    // Answer with the newest map this node has now, not the one the request started with.
    auto now_map = d_.maps->Current();
    if (now_map) {
      response.epoch = now_map->epoch();
      // A sender with an older map gets the newer one in the same reply (Redis's MOVED without
      // the failure), so it refreshes without another round trip.
      if (request_epoch != 0 && request_epoch < now_map->epoch()) {
        response.cluster_map = now_map->Encode();
      }
    }
    response.ts = relayed_ts ? *relayed_ts : d_.storage->clock().Last();
    response.wall_clock_ms = common::HlcClock::WallClockMs();  // for the peers' clock offsets
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    if (client_op) PlainNoSpace(&body);
    d_.stats->RecordRequest(op, static_cast<uint64_t>(micros), StatusOf(body), client_op);
    response.body = std::move(body);
    done(std::move(response));
  };

  // Raft messages too: consensus runs whatever the map's epoch (it is how maps are decided).
  const bool info_op = std::holds_alternative<net::PingRequest>(request.body) ||
                       std::holds_alternative<net::GetClusterMapRequest>(request.body) ||
                       std::holds_alternative<net::StatsRequest>(request.body) ||
                       std::holds_alternative<net::RaftMessageRequest>(request.body);
  const bool adopt = std::holds_alternative<net::InstallMapRequest>(request.body) &&
                     std::get<net::InstallMapRequest>(request.body).adopt;
  if (!map) return HandleWithoutMap(request, std::move(reply));
  if (!ready_.load() && !info_op && !adopt) {
    return reply(Error(Status(
        Status::Code::kUnavailable, Status::Reason::kStarting,
        "node " + std::to_string(d_.self_id) + " is starting (fetching the newest cluster map)")));
  }
  if (request.cluster_id != 0 && request.cluster_id != map->cluster_id() && !adopt) {
    return reply(Error(Status(Status::Code::kFailedPrecondition, Status::Reason::kWrongCluster,
                              "request for cluster " + std::to_string(request.cluster_id) +
                                  " reached node " + std::to_string(d_.self_id) + " of cluster " +
                                  std::to_string(map->cluster_id()))));
  }
  if (client_op) {
    // A node cut off from the cluster's leader may hold an old map: it does not coordinate.
    if (d_.fence) {
      if (Status fenced = d_.fence(); !fenced.ok()) return reply(Error(fenced));
    }
    // A node whose clock is off the cluster's assigns no timestamps: a node whose clock agrees
    // coordinates the request instead (once: a forwarded request is never sent on again). Before
    // the deadline check: this node's clock cannot tell whether the client's deadline passed (one
    // 1.25 s ahead dropped every fresh request as late), the coordinator's can.
    if (!request.forwarded && d_.healthy_coordinator && d_.forward) {
      if (std::string to = d_.healthy_coordinator(); !to.empty()) {
        request.forwarded = true;
        sent_on_.fetch_add(1, std::memory_order_relaxed);
        return d_.forward(to, std::move(request),
                          [reply = std::move(reply)](net::ResponseBody body, uint64_t ts) mutable {
                            reply(std::move(body), ts);
                          });
      }
    }
    if (std::optional<Status> late = LateDrop(request.deadline_ms, d_.self_id)) {
      late_.fetch_add(1, std::memory_order_relaxed);
      return reply(Error(*late));
    }
    // A node whose storage fails cannot stamp or keep a write: Unavailable sends the client to
    // another node (design.md "Storage format": Storage health).
    if (IsClientWrite(request.body)) {
      if (Status sick = StorageWriteRefusal(*d_.storage, d_.self_id); !sick.ok()) {
        return reply(Error(sick));
      }
    }
  }
  if (request.client_ts != 0) {
    Status s = d_.storage->clock().Update(request.client_ts);
    // Stats, ping and map requests answer even when the clock cannot move (its ceiling cannot
    // be persisted on a failing disk): they take no timestamp, and stats is how an operator
    // sees the failure.
    if (!s.ok() && !info_op) {
      return reply(Error(
          s.WithContext("client timestamp rejected").WithReason(Status::Reason::kClockRejected)));
    }
  }
  const bool admin = adopt || std::holds_alternative<net::InstallMapRequest>(request.body) ||
                     std::holds_alternative<net::AdminRequest>(request.body);
  if (request.epoch > map->epoch() && !info_op && !admin && d_.membership != nullptr) {
    // The sender knows a newer map: get it before serving (design.md "Propagation").
    // The wait ends by the client's deadline at the latest, and a client op whose deadline
    // passed meanwhile is dropped: its client has retried elsewhere and may have written newer
    // versions since, which a write stamped now would overwrite (seen on the bed: a put held
    // here across a map install undid an acknowledged delete of the same key).
    auto held = std::make_shared<net::Request>(std::move(request));
    const uint64_t epoch = held->epoch;
    auto wait = std::chrono::milliseconds(2000);
    if (client_op && held->deadline_ms != 0) {
      const uint64_t now_ms = common::HlcClock::WallClockMs();
      wait = std::min<std::chrono::milliseconds>(
          wait,
          std::chrono::milliseconds(held->deadline_ms > now_ms ? held->deadline_ms - now_ms : 0));
    }
    d_.membership->AwaitEpoch(
        epoch, wait, [this, held, client_op, reply = std::move(reply)](bool) mutable {
          if (client_op) {
            if (std::optional<Status> late = LateDrop(held->deadline_ms, d_.self_id)) {
              late_.fetch_add(1, std::memory_order_relaxed);
              return reply(Error(*late));
            }
          }
          Dispatch(d_.maps->Current(), *held, std::move(reply));
        });
    return;
  }
  Dispatch(map, request, std::move(reply));
}

void KvService::HandleWithoutMap(net::Request& request, Reply reply) {
  // No map: the node is unformed (ready), or still loading its map (not ready). Either way it
  // answers what `cluster init` and `cluster join` need to look at it and form it, and nothing
  // that would need a map. The "unformed:" prefix of getClusterMap's refusal is the contract
  // those commands test for.
  const bool ready = ready_.load();
  const std::string id = std::to_string(d_.self_id);
  const Status unavailable = ready
                                 ? Status(Status::Code::kUnavailable, Status::Reason::kUnformed,
                                          UnformedMessage(d_.self_id))
                                 : Status(Status::Code::kUnavailable, Status::Reason::kStarting,
                                          "node " + id + " is starting (loading its cluster map)");
  if (std::holds_alternative<net::PingRequest>(request.body)) return reply(net::PingResponse{});
  if (std::holds_alternative<net::StatsRequest>(request.body)) return reply(Stats());
  if (std::holds_alternative<net::GetClusterMapRequest>(request.body)) {
    if (!ready) return reply(Error(unavailable));
    return reply(
        Error(Status(Status::Code::kFailedPrecondition, Status::Reason::kUnformed,
                     "unformed: node " + id + " has no cluster map (not in a cluster yet)")));
  }
  auto* install = std::get_if<net::InstallMapRequest>(&request.body);
  if (install != nullptr && install->adopt && d_.membership != nullptr) {
    return d_.membership->HandleInstall(std::move(*install), std::move(reply));
  }
  reply(Error(unavailable));
}

std::string UnformedMessage(uint32_t node_id) {
  return "node " + std::to_string(node_id) +
         " is unformed (not in a cluster yet): form a cluster with `shardkv cluster init` or "
         "add it with `shardkv cluster join`";
}

void KvService::Dispatch(const std::shared_ptr<const ClusterMap>& map, net::Request& request,
                         Reply reply) {
  const net::Consistency c = request.consistency;
  std::visit(
      [&](auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, net::PingRequest>) {
          reply(net::PingResponse{});
        } else if constexpr (std::is_same_v<T, net::GetRequest>) {
          Get(map, c, op, std::move(reply));
        } else if constexpr (std::is_same_v<T, net::PutRequest>) {
          if (Status s = CheckValue(op.value); !s.ok()) return reply(Error(s));
          if (Status s = CheckTtl(op.ttl_ms); !s.ok()) return reply(Error(s));
          cluster::WriteSpec spec = PutSpec(op);
          spec.deadline_ms = request.deadline_ms;
          Write(map, c, std::move(op.key), std::move(spec), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::DeleteRequest>) {
          cluster::WriteSpec spec;
          spec.kind = cluster::WriteSpec::Kind::kDelete;
          spec.deadline_ms = request.deadline_ms;
          Write(map, c, std::move(op.key), std::move(spec), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::MultiGetRequest>) {
          MultiGet(map, c, op, std::move(reply));
        } else if constexpr (std::is_same_v<T, net::MultiPutRequest>) {
          MultiPut(map, c, op, request.deadline_ms, std::move(reply));
        } else if constexpr (std::is_same_v<T, net::StatsRequest>) {
          reply(Stats());
        } else if constexpr (std::is_same_v<T, net::GetClusterMapRequest>) {
          reply(net::GetClusterMapResponse{map->Encode()});
        } else if constexpr (std::is_same_v<T, net::ReplicaWriteRequest>) {
          if (std::optional<Status> late =
                  LateReplicaWrite(request.deadline_ms, d_.max_clock_offset_ms, d_.self_id)) {
            return reply(Error(*late));
          }
          reply(ReplicaWrite(*map, request.epoch, op));
        } else if constexpr (std::is_same_v<T, net::ReplicaWriteBatchRequest>) {
          if (std::optional<Status> late =
                  LateReplicaWrite(request.deadline_ms, d_.max_clock_offset_ms, d_.self_id)) {
            return reply(Error(*late));
          }
          reply(ReplicaWriteBatch(*map, request.epoch, op));
        } else if constexpr (std::is_same_v<T, net::ReplicaReadRequest>) {
          reply(ReplicaRead(*map, request.epoch, op));
        } else if constexpr (std::is_same_v<T, net::InstallMapRequest>) {
          d_.membership->HandleInstall(std::move(op), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::StreamScanRequest>) {
          if (d_.stream_sink == nullptr) return reply(Error(Status::NotSupported("no streams")));
          d_.stream_sink->HandleScan(std::move(op), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::StreamRangeRequest>) {
          if (d_.stream_sink == nullptr) return reply(Error(Status::NotSupported("no streams")));
          d_.stream_sink->HandleStream(std::move(op), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::CountRangesRequest>) {
          if (d_.stream_sink == nullptr) return reply(Error(Status::NotSupported("no streams")));
          d_.stream_sink->HandleCount(std::move(op), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::ExpireRequest>) {
          Expire(map, c, op, std::move(reply));
        } else if constexpr (std::is_same_v<T, net::AdminRequest>) {
          if (!d_.admin) return reply(Error(Status::NotSupported("no rebalancer on this node")));
          d_.admin(std::move(op), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::ScanRequest>) {
          Scan(map, c, std::move(op), std::move(reply));
        } else if constexpr (std::is_same_v<T, net::ReplicaScanRequest>) {
          reply(ReplicaScan(*map, request.epoch, op));
        } else if constexpr (std::is_same_v<T, net::RaftMessageRequest>) {
          if (!d_.raft_message) return reply(Error(Status::NotSupported("no consensus")));
          d_.raft_message(std::move(op.data));
          reply(net::PingResponse{});
        } else if constexpr (std::is_same_v<T, net::AntiEntropyRequest>) {
          if (d_.repair_service == nullptr) return reply(Error(Status::NotSupported("no repair")));
          d_.repair_service->Handle(std::move(op), std::move(reply));
        } else {
          reply(Error(Status::NotSupported("operation not supported by this node")));
        }
      },
      request.body);
}

void KvService::Get(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                    net::GetRequest& r, Reply reply) {
  if (Status s = CheckKey(r.key); !s.ok()) return reply(Error(s));
  const uint64_t token = map->TokenOf(r.key);
  d_.coordinator->Read(
      map, token, std::move(r.key), c,
      [reply = std::move(reply), storage = d_.storage](StatusOr<storage::Envelope> env) {
        net::GetResponse out;
        if (env.ok()) {
          out.ts = env->timestamp;
          // This node's wall clock decides expiry for client reads.
          out.found = env->LiveAt(storage->WallClockMs());
          if (out.found) {
            out.value = std::move(env->value);
            out.expires_at_ms = env->expires_at_ms();
          }
        } else if (!env.status().IsNotFound()) {
          return reply(Error(env.status()));
        }
        reply(std::move(out));
      });
}

void KvService::Write(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                      std::string key, cluster::WriteSpec spec, Reply reply) {
  if (Status s = CheckKey(key); !s.ok()) return reply(Error(s));
  const uint64_t token = map->TokenOf(key);
  const bool is_delete = spec.kind == cluster::WriteSpec::Kind::kDelete;
  d_.coordinator->Write(map, token, std::move(key), std::move(spec), c,
                        [reply = std::move(reply), is_delete](StatusOr<uint64_t> ts) {
                          if (!ts.ok()) return reply(Error(ts.status()));
                          if (is_delete) return reply(net::DeleteResponse{*ts});
                          reply(net::PutResponse{*ts});
                        });
}

void KvService::MultiGet(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                         net::MultiGetRequest& r, Reply reply) {
  if (r.keys.empty()) return reply(net::MultiGetResponse{});
  auto gather = std::make_shared<Gather<net::ItemResult>>(
      r.keys.size(), [reply = std::move(reply)](std::vector<net::ItemResult> items) {
        reply(net::MultiGetResponse{std::move(items)});
      });
  for (size_t i = 0; i < r.keys.size(); ++i) {
    if (Status s = CheckKey(r.keys[i].key); !s.ok()) {
      net::ItemResult failed;
      failed.status = s;
      gather->Set(i, std::move(failed));
      continue;
    }
    const uint64_t token = map->TokenOf(r.keys[i].key);
    d_.coordinator->Read(map, token, std::move(r.keys[i].key), c,
                         [gather, i, storage = d_.storage](StatusOr<storage::Envelope> env) {
                           net::ItemResult item;
                           if (env.ok()) {
                             item.ts = env->timestamp;
                             item.found = env->LiveAt(storage->WallClockMs());
                             if (item.found) item.value = std::move(env->value);
                           } else if (!env.status().IsNotFound()) {
                             item.status = env.status();
                           }
                           gather->Set(i, std::move(item));
                         });
  }
}

void KvService::MultiPut(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                         net::MultiPutRequest& r, uint64_t deadline_ms, Reply reply) {
  if (r.items.empty()) return reply(net::MultiPutResponse{});
  auto gather = std::make_shared<Gather<net::ItemResult>>(
      r.items.size(), [reply = std::move(reply)](std::vector<net::ItemResult> items) {
        reply(net::MultiPutResponse{std::move(items)});
      });
  std::vector<cluster::Coordinator::BatchWrite> writes;
  writes.reserve(r.items.size());
  for (size_t i = 0; i < r.items.size(); ++i) {
    net::PutRequest& item = r.items[i];
    Status s = CheckKey(item.key);
    if (s.ok()) s = CheckValue(item.value);
    if (s.ok()) s = CheckTtl(item.ttl_ms);
    if (!s.ok()) {
      net::ItemResult failed;
      failed.status = s;
      gather->Set(i, std::move(failed));
      continue;
    }
    const uint64_t token = map->TokenOf(item.key);
    cluster::WriteSpec spec = PutSpec(item);
    spec.deadline_ms = deadline_ms;
    writes.push_back(cluster::Coordinator::BatchWrite{token, std::move(item.key), std::move(spec),
                                                      [gather, i](StatusOr<uint64_t> ts) {
                                                        net::ItemResult out;
                                                        if (ts.ok()) {
                                                          out.ts = *ts;
                                                        } else {
                                                          out.status = ts.status();
                                                        }
                                                        gather->Set(i, std::move(out));
                                                      }});
  }
  // One coordinator batch: this node's copies of every item go to storage in one write.
  if (!writes.empty()) d_.coordinator->WriteMany(map, std::move(writes), c);
}

Status KvService::CheckFence(const ClusterMap& map, uint64_t sender_epoch, uint64_t token) const {
  // Fencing (design.md "Fencing"): a sender behind our epoch may only touch tokens we still hold,
  // so a node paused or partitioned through a change cannot write into ranges that have moved.
  if (sender_epoch >= map.epoch()) return Status::OK();
  if (map.Holds(d_.self_id, token)) return Status::OK();
  return Status::StaleEpoch("node " + std::to_string(d_.self_id) +
                            " does not hold this token at epoch " + std::to_string(map.epoch()));
}

net::ResponseBody KvService::ReplicaWrite(const ClusterMap& map, uint64_t sender_epoch,
                                          const net::ReplicaWriteRequest& r) {
  if (Status s = CheckFence(map, sender_epoch, r.token); !s.ok()) return Error(s);
  auto written = d_.storage->Write(
      r.token, r.key, cluster::EnvelopeFromWire(r.ts, r.node_id, r.tombstone, r.value, r.expiry));
  if (!written.ok()) return Error(written.status());
  // A superseded write's reply needs no extra clock move for re-stamping: every stored version
  // moved this clock when it was stored (Storage::Write), so the reply's ts already covers it.
  return net::ReplicaWriteResponse{static_cast<uint8_t>(written->outcome)};
}

net::ResponseBody KvService::ReplicaWriteBatch(const ClusterMap& map, uint64_t sender_epoch,
                                               const net::ReplicaWriteBatchRequest& r) {
  // Each write is fenced on its own token, as a replicaWrite would be; the rest go to storage in
  // one batch (one WAL append), each answered as its own Write would have been.
  net::ReplicaWriteBatchResponse out;
  out.results.resize(r.writes.size());
  std::vector<storage::RangeEntry> entries;
  std::vector<size_t> at;
  entries.reserve(r.writes.size());
  at.reserve(r.writes.size());
  for (size_t i = 0; i < r.writes.size(); ++i) {
    const net::ReplicaWriteRequest& w = r.writes[i];
    if (Status s = CheckFence(map, sender_epoch, w.token); !s.ok()) {
      out.results[i].status = std::move(s);
      continue;
    }
    entries.push_back(storage::RangeEntry{
        w.token, w.key,
        cluster::EnvelopeFromWire(w.ts, w.node_id, w.tombstone, w.value, w.expiry)});
    at.push_back(i);
  }
  std::vector<StatusOr<storage::WriteResult>> written = d_.storage->WriteMany(entries);
  for (size_t j = 0; j < written.size(); ++j) {
    net::ReplicaWriteResult& result = out.results[at[j]];
    if (written[j].ok()) {
      result.outcome = static_cast<uint8_t>(written[j]->outcome);
    } else {
      result.status = written[j].status();
    }
  }
  return out;
}

net::ResponseBody KvService::ReplicaRead(const ClusterMap& map, uint64_t sender_epoch,
                                         const net::ReplicaReadRequest& r) {
  if (Status s = CheckFence(map, sender_epoch, r.token); !s.ok()) return Error(s);
  // Its answer could carry a value whose delete the other replicas already purged.
  if (d_.repair != nullptr) {
    if (Status s = d_.repair->Refusal("replica reads"); !s.ok()) return Error(s);
  }
  auto env = d_.storage->GetEnvelope(r.token, r.key);
  if (env.ok()) {
    net::ReplicaReadResponse read;
    read.found = true;
    read.ts = env->timestamp;
    read.node_id = env->node_id;
    read.tombstone = env->tombstone;
    read.value = std::move(env->value);
    read.expiry = cluster::ExpiryToWire(*env);
    return read;
  }
  if (env.status().IsNotFound()) return net::ReplicaReadResponse{};
  return Error(env.status());
}

void KvService::Scan(const std::shared_ptr<const ClusterMap>& map, net::Consistency c,
                     net::ScanRequest r, Reply reply) {
  if (d_.scans == nullptr) return reply(Error(Status::NotSupported("no scans on this node")));
  if (r.match.size() > limits_.max_key_bytes) {
    return reply(Error(Status::InvalidArgument("scan pattern is " + std::to_string(r.match.size()) +
                                               " bytes; the limit is " +
                                               std::to_string(limits_.max_key_bytes))));
  }
  d_.scans->Scan(map, std::move(r), c, [reply = std::move(reply)](StatusOr<net::ScanResponse> out) {
    if (!out.ok()) return reply(Error(out.status()));
    reply(std::move(out).value());
  });
}

net::ResponseBody KvService::ReplicaScan(const ClusterMap& map, uint64_t sender_epoch,
                                         const net::ReplicaScanRequest& r) {
  // Stricter than the point ops' fence: the sender chose the range under its map, and under a
  // newer one this node may hold only part of it. The refusal carries the newer map, and the
  // scan coordinator reads the range again under it.
  if (sender_epoch < map.epoch()) {
    return Error(Status::StaleEpoch("node " + std::to_string(d_.self_id) + " is at epoch " +
                                    std::to_string(map.epoch()) + ", the scan at " +
                                    std::to_string(sender_epoch)));
  }
  if (r.match.size() > limits_.max_key_bytes) {
    return Error(Status::InvalidArgument("scan pattern too long"));
  }
  if (d_.repair != nullptr) {
    if (Status s = d_.repair->Refusal("replica reads"); !s.ok()) return Error(s);
  }
  auto out = cluster::ReadReplicaRange(d_.storage, r);
  if (!out.ok()) return Error(out.status());
  return std::move(out).value();
}

net::ResponseBody KvService::Stats() {
  net::StatsResponse out;
  out.counters[std::string(stats::node_id)] = d_.self_id;
  out.counters[std::string(stats::uptime_s)] = static_cast<int64_t>(d_.stats->UptimeSeconds());
  // Read as late as possible before the reply goes out would be better still; here it is within
  // microseconds of it, far below the round trip that bounds the offset's precision anyway.
  out.counters[std::string(stats::wall_clock_ms)] =
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count();
  out.info[std::string(stats::version)] = SHARDKV_VERSION;
  if (d_.advertised_address) out.info[std::string(stats::address)] = d_.advertised_address();
  if (d_.redis_address) {
    if (std::string redis = d_.redis_address(); !redis.empty()) {
      out.info[std::string(stats::redis_address)] = std::move(redis);
    }
  }
  if (d_.metrics_address) {
    // Absent without a metrics listener (every info value reported is non-empty).
    std::string metrics = d_.metrics_address();
    if (!metrics.empty()) out.info[std::string(stats::metrics_address)] = std::move(metrics);
  }
  for (size_t op = 0; op < kOpNames.size(); ++op) {
    out.counters[std::string(stats::kOpsPrefix) + std::string(kOpNames[op])] =
        static_cast<int64_t>(d_.stats->OpCount(op));
  }
  out.counters[std::string(stats::client_errors)] = static_cast<int64_t>(d_.stats->client_errors());
  if (d_.server_stats) {
    const net::Server::Stats s = d_.server_stats();
    out.counters[std::string(stats::connections)] = static_cast<int64_t>(s.open_connections);
    out.counters[std::string(stats::connections_total)] =
        static_cast<int64_t>(s.accepted_connections);
    out.counters[std::string(stats::bad_frames)] = static_cast<int64_t>(s.bad_frames);
  }
  const cluster::CoordinatorStats cs = d_.coordinator->stats();
  out.counters[std::string(stats::quorum_failures)] = static_cast<int64_t>(cs.quorum_failures);
  out.counters[std::string(stats::read_repairs)] = static_cast<int64_t>(cs.read_repairs);
  out.counters[std::string(stats::hints_written)] = static_cast<int64_t>(cs.hints_written);
  out.counters[std::string(stats::hints_not_written)] = static_cast<int64_t>(cs.hints_not_written);
  out.counters[std::string(stats::hints_pending)] = static_cast<int64_t>(d_.hints->pending());
  out.counters[std::string(stats::hints_replayed)] = static_cast<int64_t>(d_.hints->replayed());
  out.counters[std::string(stats::hints_expired)] = static_cast<int64_t>(d_.hints->expired());
  out.counters[std::string(stats::hints_discarded)] = static_cast<int64_t>(d_.hints->discarded());
  out.counters[std::string(stats::stale_epoch_replies)] =
      static_cast<int64_t>(cs.stale_epoch_replies);
  out.counters[std::string(stats::redriven)] = static_cast<int64_t>(cs.redriven);
  out.counters[std::string(stats::writes_restamped)] = static_cast<int64_t>(cs.restamped);
  out.counters[std::string(stats::requests_late)] = static_cast<int64_t>(late_.load());
  out.counters[std::string(stats::requests_sent_on)] = static_cast<int64_t>(sent_on_.load());
  if (d_.extra_counters) d_.extra_counters(&out.counters);
  if (d_.extra_info) d_.extra_info(&out.info);
  if (d_.repair != nullptr) {
    d_.repair->AddStats(&out);
  } else {
    out.counters[std::string(stats::needs_repair)] = 0;
    out.counters[std::string(stats::rebuilt_at_ms)] = 0;
  }
  // `formed` is the contract with `cluster init`: 0 on an unformed node, which has epoch 0.
  auto current = d_.maps->Current();
  out.counters[std::string(stats::formed)] = current ? 1 : 0;
  out.counters[std::string(stats::epoch)] =
      current ? static_cast<int64_t>(current->epoch()) : int64_t{0};
  auto range = d_.storage->ApproximateRangeStats(TokenRange{0, UINT64_MAX});
  if (range.ok()) {
    out.counters[std::string(stats::keys_approx)] = static_cast<int64_t>(range->approximate_keys);
    out.counters[std::string(stats::bytes_approx)] = static_cast<int64_t>(range->approximate_bytes);
  }
  AddStorageStats(*d_.storage, &out);
  const storage::LiveKeyCounts live = d_.storage->LiveKeys();
  out.counters[std::string(stats::live_keys)] = live.keys;
  out.counters[std::string(stats::live_keys_expiring)] = live.expiring;
  out.counters[std::string(stats::live_keys_counted)] = live.complete ? 1 : 0;
  out.gauges[std::string(stats::latency_p50_us)] =
      static_cast<double>(d_.stats->latency().Percentile(0.50));
  out.gauges[std::string(stats::latency_p99_us)] =
      static_cast<double>(d_.stats->latency().Percentile(0.99));
  out.gauges[std::string(stats::latency_p999_us)] =
      static_cast<double>(d_.stats->latency().Percentile(0.999));
  return out;
}

}  // namespace shardkv::node
