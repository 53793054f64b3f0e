// KvService's operation table (design.md "Operation table"): one row per net::RequestBody
// alternative, in its order, with the op's stats name, its guards, what it does on a node
// without a map, and its handler; the client operations' handlers, shared by the native adapter
// (Handle) and the in-process one (ClientOperations).
#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "cluster/map_consensus.h"
#include "cluster/membership.h"
#include "node/kv_service.h"
#include "node/kv_service_internal.h"
#include "rebalance/rebalancer.h"
#include "rebalance/repair_service.h"
#include "rebalance/stream_sink.h"
#include "storage/counter_value.h"

namespace shardkv::node {
namespace {

using internal::Error;

// What a client read (get, multiGet) answers of a record at this node's wall clock `now_ms`:
// whether it is live, its kind, and for a string its value (a hash's fields come by hashRead).
bool ReadOut(storage::Envelope&& env, uint64_t now_ms, net::ValueKind* kind, std::string* value) {
  if (!env.LiveAt(now_ms)) return false;
  switch (env.collection()) {
    case storage::Collection::kHash:
      *kind = net::ValueKind::kHash;
      break;
    case storage::Collection::kSet:
      *kind = net::ValueKind::kSet;
      break;
    case storage::Collection::kNone:
      *value = storage::ReadValue(std::move(env), now_ms);
      break;
  }
  return true;
}

// The index of alternative T in net::RequestBody.
template <typename T, typename V>
struct IndexIn;
template <typename T, typename... Ts>
struct IndexIn<T, std::variant<Ts...>> {
  static constexpr size_t value = [] {
    size_t i = 0;
    (void)((std::is_same_v<T, Ts> ? true : (++i, false)) || ...);
    return i;
  }();
};
template <typename T>
constexpr size_t kIndexOf = IndexIn<T, net::RequestBody>::value;

// The typed answer of each client operation.
template <typename T>
struct ResponseOf;
template <>
struct ResponseOf<net::GetRequest> {
  using type = net::GetResponse;
};
template <>
struct ResponseOf<net::PutRequest> {
  using type = net::PutResponse;
};
template <>
struct ResponseOf<net::DeleteRequest> {
  using type = net::DeleteResponse;
};
template <>
struct ResponseOf<net::MultiGetRequest> {
  using type = net::MultiGetResponse;
};
template <>
struct ResponseOf<net::MultiPutRequest> {
  using type = net::MultiPutResponse;
};
template <>
struct ResponseOf<net::ExpireRequest> {
  using type = net::PutResponse;
};
template <>
struct ResponseOf<net::ScanRequest> {
  using type = net::ScanResponse;
};
template <>
struct ResponseOf<net::IncrRequest> {
  using type = net::IncrResponse;
};
template <>
struct ResponseOf<net::HashWriteRequest> {
  using type = net::HashWriteResponse;
};
template <>
struct ResponseOf<net::HashReadRequest> {
  using type = net::HashReadResponse;
};
template <>
struct ResponseOf<net::SetWriteRequest> {
  using type = net::SetWriteResponse;
};
template <>
struct ResponseOf<net::SetReadRequest> {
  using type = net::SetReadResponse;
};

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

// The guards of the ops: a client data op (coordinated here), one that also writes, a
// node-to-node op, an admin op (never held for a newer map: it may be how the map arrives), and
// an info op (answered whatever the node's state, cluster id aside).
constexpr uint32_t kClientRead = kGuardReady | kGuardClusterId | kGuardFence | kGuardSendOn |
                                 kGuardDeadline | kGuardClock | kGuardEpoch | kOpClient;
constexpr uint32_t kClientWrite = kClientRead | kGuardStorage;
constexpr uint32_t kNodeOp = kGuardReady | kGuardClusterId | kGuardClock | kGuardEpoch;
constexpr uint32_t kAdminOp = kGuardReady | kGuardClusterId | kGuardClock;
constexpr uint32_t kInfoOp = kGuardClusterId;

}  // namespace

// Friend of KvService: the rows' handlers and the table's type.
struct OpTable {
  using Call = KvService::Call;
  using Reply = KvService::Reply;
  using Native = void (*)(KvService&, Call&, net::RequestBody&, Reply&&);
  struct Row {
    std::string_view name;  // stats: ops_<name>
    uint32_t guards = 0;    // OpGuard bits
    Unformed unformed = Unformed::kRefuse;
    size_t index = SIZE_MAX;  // the net::RequestBody alternative `native` takes
    Native native = nullptr;
    // Set by Make with `native`: the completeness check reads this, not `native == nullptr`,
    // because GCC does not fold a function address compared with null in a constant expression
    // under -fsanitize=null (it implies -fno-delete-null-pointer-checks): the ASan build failed.
    bool has_handler = false;
  };

  template <typename T, void (*F)(KvService&, Call&, T&, Reply&&)>
  static void Unwrap(KvService& s, Call& c, net::RequestBody& body, Reply&& reply) {
    F(s, c, *std::get_if<T>(&body), std::move(reply));  // the row's index is T's: never null
  }
  template <typename T, void (*F)(KvService&, Call&, T&, Reply&&)>
  static constexpr Row Make(std::string_view name, uint32_t guards,
                            Unformed unformed = Unformed::kRefuse) {
    return Row{name, guards, unformed, kIndexOf<T>, &Unwrap<T, F>, true};
  }
  // A client op's answer on the native path: an error or the typed reply, put straight into the
  // ResponseBody (no StatusOr in between); a StatusOr too, for a handler that passes `done` on
  // as a std::function of one (scan).
  template <typename Resp>
  struct NativeDone {
    void operator()(const Status& s) const { reply(Error(s)); }
    void operator()(Resp&& out) const { reply(net::ResponseBody(std::move(out))); }
    void operator()(StatusOr<Resp> out) const {
      if (!out.ok()) return reply(Error(out.status()));
      reply(net::ResponseBody(std::move(out).value()));
    }
    Reply reply;
  };
  // A client op: the shared typed handler.
  template <typename T>
  static void Client(KvService& s, Call& c, T& r, Reply&& reply) {
    s.Serve(c, r, NativeDone<typename ResponseOf<T>::type>{std::move(reply)});
  }
  template <typename T>
  static constexpr Row ClientRow(std::string_view name, uint32_t guards) {
    return Make<T, &Client<T>>(name, guards);
  }

  static void Ping(KvService&, Call&, net::PingRequest&, Reply&& reply) {
    reply(net::PingResponse{});
  }
  static void Stats(KvService& s, Call&, net::StatsRequest&, Reply&& reply) { reply(s.Stats()); }
  static void GetClusterMap(KvService&, Call& c, net::GetClusterMapRequest&, Reply&& reply) {
    reply(net::GetClusterMapResponse{c.map->Encode()});
  }
  static void ReplicaWrite(KvService& s, Call& c, net::ReplicaWriteRequest& r, Reply&& reply) {
    reply(s.ReplicaWrite(*c.map, c.epoch, r));
  }
  static void ReplicaWriteBatch(KvService& s, Call& c, net::ReplicaWriteBatchRequest& r,
                                Reply&& reply) {
    reply(s.ReplicaWriteBatch(*c.map, c.epoch, r));
  }
  static void ReplicaRead(KvService& s, Call& c, net::ReplicaReadRequest& r, Reply&& reply) {
    reply(s.ReplicaRead(*c.map, c.epoch, r));
  }
  static void ReplicaScan(KvService& s, Call& c, net::ReplicaScanRequest& r, Reply&& reply) {
    reply(s.ReplicaScan(*c.map, c.epoch, r));
  }
  static void InstallMap(KvService& s, Call&, net::InstallMapRequest& r, Reply&& reply) {
    s.d_.membership->HandleInstall(std::move(r), std::move(reply));
  }
  static void StreamScan(KvService& s, Call&, net::StreamScanRequest& r, Reply&& reply) {
    if (s.d_.stream_sink == nullptr) return reply(Error(Status::NotSupported("no streams")));
    s.d_.stream_sink->HandleScan(std::move(r), std::move(reply));
  }
  static void StreamRange(KvService& s, Call&, net::StreamRangeRequest& r, Reply&& reply) {
    if (s.d_.stream_sink == nullptr) return reply(Error(Status::NotSupported("no streams")));
    s.d_.stream_sink->HandleStream(std::move(r), std::move(reply));
  }
  static void CountRanges(KvService& s, Call&, net::CountRangesRequest& r, Reply&& reply) {
    if (s.d_.stream_sink == nullptr) return reply(Error(Status::NotSupported("no streams")));
    s.d_.stream_sink->HandleCount(std::move(r), std::move(reply));
  }
  static void Admin(KvService& s, Call&, net::AdminRequest& r, Reply&& reply) {
    if (s.d_.rebalancer == nullptr) {
      return reply(Error(Status::NotSupported("no rebalancer on this node")));
    }
    s.d_.rebalancer->HandleAdmin(std::move(r), std::move(reply));
  }
  static void RaftMessage(KvService& s, Call&, net::RaftMessageRequest& r, Reply&& reply) {
    if (s.d_.consensus == nullptr) return reply(Error(Status::NotSupported("no consensus")));
    s.d_.consensus->Receive(std::move(r.data));
    reply(net::PingResponse{});
  }
  static void AntiEntropy(KvService& s, Call&, net::AntiEntropyRequest& r, Reply&& reply) {
    if (s.d_.repair_service == nullptr) return reply(Error(Status::NotSupported("no repair")));
    s.d_.repair_service->Handle(std::move(r), std::move(reply));
  }
};

namespace {

using Row = OpTable::Row;

// In net::RequestBody's order (checked below).
constexpr std::array<Row, KvService::kOpCount> kRows = {
    OpTable::Make<net::PingRequest, &OpTable::Ping>("ping", kInfoOp, Unformed::kServe),
    OpTable::ClientRow<net::GetRequest>("get", kClientRead),
    OpTable::ClientRow<net::PutRequest>("put", kClientWrite),
    OpTable::ClientRow<net::DeleteRequest>("delete", kClientWrite),
    OpTable::ClientRow<net::MultiGetRequest>("multi_get", kClientRead),
    OpTable::ClientRow<net::MultiPutRequest>("multi_put", kClientWrite),
    OpTable::Make<net::StatsRequest, &OpTable::Stats>("stats", kInfoOp, Unformed::kServe),
    OpTable::Make<net::GetClusterMapRequest, &OpTable::GetClusterMap>("get_cluster_map", kInfoOp,
                                                                      Unformed::kNoMap),
    OpTable::Make<net::ReplicaWriteRequest, &OpTable::ReplicaWrite>(
        "replica_write", kNodeOp | kGuardReplicaDeadline),
    OpTable::Make<net::ReplicaReadRequest, &OpTable::ReplicaRead>("replica_read", kNodeOp),
    OpTable::Make<net::InstallMapRequest, &OpTable::InstallMap>("install_map", kAdminOp,
                                                                Unformed::kAdoptOnly),
    OpTable::Make<net::StreamScanRequest, &OpTable::StreamScan>("stream_scan", kNodeOp),
    OpTable::Make<net::StreamRangeRequest, &OpTable::StreamRange>("stream_range", kNodeOp),
    OpTable::Make<net::CountRangesRequest, &OpTable::CountRanges>("count_ranges", kNodeOp),
    OpTable::Make<net::AdminRequest, &OpTable::Admin>("admin", kAdminOp),
    OpTable::ClientRow<net::ExpireRequest>("expire", kClientWrite),
    OpTable::ClientRow<net::ScanRequest>("scan", kClientRead),
    OpTable::Make<net::ReplicaScanRequest, &OpTable::ReplicaScan>("replica_scan", kNodeOp),
    // Consensus runs whatever the map's epoch: it is how maps are decided.
    OpTable::Make<net::RaftMessageRequest, &OpTable::RaftMessage>("raft_message", kInfoOp),
    OpTable::Make<net::AntiEntropyRequest, &OpTable::AntiEntropy>("anti_entropy", kNodeOp),
    OpTable::Make<net::ReplicaWriteBatchRequest, &OpTable::ReplicaWriteBatch>(
        "replica_write_batch", kNodeOp | kGuardReplicaDeadline),
    OpTable::ClientRow<net::IncrRequest>("incr", kClientWrite),
    OpTable::ClientRow<net::HashWriteRequest>("hash_write", kClientWrite),
    OpTable::ClientRow<net::HashReadRequest>("hash_read", kClientRead),
    OpTable::ClientRow<net::SetWriteRequest>("set_write", kClientWrite),
    OpTable::ClientRow<net::SetReadRequest>("set_read", kClientRead),
};

// Every alternative has its row, in its place, with a handler and a name of its own: a new
// alternative without one leaves a default row here and fails this check.
constexpr bool RowsComplete() {
  for (size_t i = 0; i < kRows.size(); ++i) {
    if (kRows[i].index != i || !kRows[i].has_handler || kRows[i].name.empty()) return false;
    for (size_t j = 0; j < i; ++j) {
      if (kRows[j].name == kRows[i].name) return false;
    }
  }
  return true;
}
static_assert(RowsComplete(), "every net::RequestBody alternative needs its row, in order");

}  // namespace

std::string_view KvService::OpName(size_t op) {
  return op < kRows.size() ? kRows[op].name : std::string_view();
}

uint32_t KvService::OpGuards(size_t op) { return op < kRows.size() ? kRows[op].guards : 0; }

Unformed KvService::OpUnformed(size_t op) {
  return op < kRows.size() ? kRows[op].unformed : Unformed::kRefuse;
}

void KvService::RunNative(size_t op, Call& call, net::RequestBody& body, Reply&& reply) {
  kRows[op].native(*this, call, body, std::move(reply));
}

template <typename Req, typename Resp>
void KvService::RunTyped(net::OpOptions options, Req request, net::OpDone<Resp> done) {
  constexpr size_t op = kIndexOf<Req>;
  constexpr uint32_t guards = kRows[op].guards;
  static_assert((guards & kOpClient) != 0, "the in-process calls are client data ops");
  const auto start = std::chrono::steady_clock::now();
  Call call;
  call.map = d_.maps->Current();
  call.consistency = options.consistency;
  // The native reply's stats and plain full-disk message, without its header.
  auto finish = [this, start, done = std::move(done)](StatusOr<Resp> out) mutable {
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    if (!out.ok()) out = internal::PlainNoSpace(out.status());
    d_.stats->RecordRequest(op, static_cast<uint64_t>(micros),
                            out.ok() ? Status::OK() : out.status(), /*client_op=*/true);
    done(std::move(out));
  };
  Admission admission = Admit(guards, kRows[op].unformed, call);
  switch (admission.kind) {
    case Admission::Kind::kRefuse:
      return finish(std::move(admission.refusal));
    case Admission::Kind::kSendOn: {
      // The only wire encoding on this path: the request goes to another node.
      net::Request sent;
      sent.consistency = options.consistency;
      sent.forwarded = true;
      sent.body = std::move(request);
      return SendOn(admission.send_to, std::move(sent),
                    [finish = std::move(finish)](net::ResponseBody body, uint64_t) mutable {
                      if (auto* e = std::get_if<net::ErrorResponse>(&body)) {
                        return finish(e->ToStatus());
                      }
                      if (auto* r = std::get_if<Resp>(&body)) return finish(std::move(*r));
                      finish(Status::Internal("unexpected reply from the coordinator"));
                    });
    }
    case Admission::Kind::kAwaitEpoch:  // never: a call in this process carries no epoch
    case Admission::Kind::kRun:
      break;
  }
  // No wait, and no client op is a replica write: AtDispatch has nothing left to check.
  static_assert((guards & kGuardReplicaDeadline) == 0);
  Serve(call, request, std::move(finish));
}

void KvService::Get(net::OpOptions o, net::GetRequest r, net::OpDone<net::GetResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::Put(net::OpOptions o, net::PutRequest r, net::OpDone<net::PutResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::Delete(net::OpOptions o, net::DeleteRequest r,
                       net::OpDone<net::DeleteResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::MultiGet(net::OpOptions o, net::MultiGetRequest r,
                         net::OpDone<net::MultiGetResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::MultiPut(net::OpOptions o, net::MultiPutRequest r,
                         net::OpDone<net::MultiPutResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::Expire(net::OpOptions o, net::ExpireRequest r, net::OpDone<net::PutResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::Scan(net::OpOptions o, net::ScanRequest r, net::OpDone<net::ScanResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::Incr(net::OpOptions o, net::IncrRequest r, net::OpDone<net::IncrResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::HashWrite(net::OpOptions o, net::HashWriteRequest r,
                          net::OpDone<net::HashWriteResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::HashRead(net::OpOptions o, net::HashReadRequest r,
                         net::OpDone<net::HashReadResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::SetWrite(net::OpOptions o, net::SetWriteRequest r,
                         net::OpDone<net::SetWriteResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}
void KvService::SetRead(net::OpOptions o, net::SetReadRequest r,
                        net::OpDone<net::SetReadResponse> done) {
  RunTyped(o, std::move(r), std::move(done));
}

// ---- The client operations' handlers ----

template <typename Done>
void KvService::Serve(const Call& call, net::GetRequest& r, Done done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  const uint64_t token = call.map->TokenOf(r.key);
  d_.coordinator->Read(
      call.map, token, std::move(r.key), call.consistency,
      [done = std::move(done), storage = d_.storage](StatusOr<storage::Envelope> env) mutable {
        net::GetResponse out;
        if (env.ok()) {
          out.ts = env->timestamp;
          // This node's wall clock decides expiry for client reads.
          const uint64_t now = storage->WallClockMs();
          out.expires_at_ms = env->ExpiresAtMsAt(now);
          out.found = ReadOut(std::move(*env), now, &out.kind, &out.value);
          if (!out.found) out.expires_at_ms = 0;
        } else if (!env.status().IsNotFound()) {
          return done(env.status());
        }
        done(std::move(out));
      });
}

template <typename Resp, typename Done>
void KvService::Write(const Call& call, std::string key, cluster::WriteSpec spec, Done done) {
  if (Status s = CheckKey(key); !s.ok()) return done(std::move(s));
  const uint64_t token = call.map->TokenOf(key);
  d_.coordinator->Write(call.map, token, std::move(key), std::move(spec), call.consistency,
                        [done = std::move(done)](StatusOr<uint64_t> ts) mutable {
                          if (!ts.ok()) return done(ts.status());
                          done(Resp{*ts});
                        });
}

template <typename Done>
void KvService::Serve(const Call& call, net::PutRequest& r, Done done) {
  if (Status s = CheckValue(r.value); !s.ok()) return done(std::move(s));
  if (Status s = CheckTtl(r.ttl_ms); !s.ok()) return done(std::move(s));
  cluster::WriteSpec spec = PutSpec(r);
  spec.deadline_ms = call.deadline_ms;
  Write<net::PutResponse>(call, std::move(r.key), std::move(spec), std::move(done));
}

template <typename Done>
void KvService::Serve(const Call& call, net::DeleteRequest& r, Done done) {
  cluster::WriteSpec spec;
  spec.kind = cluster::WriteSpec::Kind::kDelete;
  spec.deadline_ms = call.deadline_ms;
  Write<net::DeleteResponse>(call, std::move(r.key), std::move(spec), std::move(done));
}

template <typename Done>
void KvService::Serve(const Call& call, net::MultiGetRequest& r, Done done) {
  if (r.keys.empty()) return done(net::MultiGetResponse{});
  auto gather = std::make_shared<Gather<net::ItemResult>>(
      r.keys.size(), [done = std::move(done)](std::vector<net::ItemResult> items) mutable {
        done(net::MultiGetResponse{std::move(items)});
      });
  for (size_t i = 0; i < r.keys.size(); ++i) {
    if (Status s = CheckKey(r.keys[i].key); !s.ok()) {
      net::ItemResult failed;
      failed.status = std::move(s);
      gather->Set(i, std::move(failed));
      continue;
    }
    const uint64_t token = call.map->TokenOf(r.keys[i].key);
    d_.coordinator->Read(call.map, token, std::move(r.keys[i].key), call.consistency,
                         [gather, i, storage = d_.storage](StatusOr<storage::Envelope> env) {
                           net::ItemResult item;
                           if (env.ok()) {
                             item.ts = env->timestamp;
                             item.found = ReadOut(std::move(*env), storage->WallClockMs(),
                                                  &item.kind, &item.value);
                           } else if (!env.status().IsNotFound()) {
                             item.status = env.status();
                           }
                           gather->Set(i, std::move(item));
                         });
  }
}

template <typename Done>
void KvService::Serve(const Call& call, net::MultiPutRequest& r, Done done) {
  if (r.items.empty()) return done(net::MultiPutResponse{});
  auto gather = std::make_shared<Gather<net::ItemResult>>(
      r.items.size(), [done = std::move(done)](std::vector<net::ItemResult> items) mutable {
        done(net::MultiPutResponse{std::move(items)});
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
      failed.status = std::move(s);
      gather->Set(i, std::move(failed));
      continue;
    }
    const uint64_t token = call.map->TokenOf(item.key);
    cluster::WriteSpec spec = PutSpec(item);
    spec.deadline_ms = call.deadline_ms;
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
  if (!writes.empty()) d_.coordinator->WriteMany(call.map, std::move(writes), call.consistency);
}

template <typename Done>
void KvService::Serve(const Call& call, net::ScanRequest& r, Done done) {
  if (d_.scans == nullptr) return done(Status::NotSupported("no scans on this node"));
  if (r.match.size() > limits_.max_key_bytes) {
    return done(Status::InvalidArgument("scan pattern is " + std::to_string(r.match.size()) +
                                        " bytes; the limit is " +
                                        std::to_string(limits_.max_key_bytes)));
  }
  d_.scans->Scan(call.map, std::move(r), call.consistency, std::move(done));
}

}  // namespace shardkv::node
