// KvService's guards and its native adapter (Handle). The rows and the handlers are in
// kv_service_ops.cc, the node-to-node handlers in kv_service_replica.cc.
#include "node/kv_service.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "cluster/map_consensus.h"
#include "common/hlc.h"
#include "net/peer_pool.h"
#include "node/kv_service_internal.h"
#include "node/storage_status.h"

namespace shardkv::node {
namespace {

using internal::Error;

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

Status StatusOf(const net::ResponseBody& body) {
  if (const auto* e = std::get_if<net::ErrorResponse>(&body)) return e->ToStatus();
  return Status::OK();
}

}  // namespace

KvService::Admission KvService::Refuse(Status s) {
  Admission a;
  a.kind = Admission::Kind::kRefuse;
  a.refusal = std::move(s);
  return a;
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
  const uint32_t guards = OpGuards(op);
  const bool client_op = (guards & kOpClient) != 0;
  Call call;
  call.map = d_.maps->Current();
  call.epoch = request.epoch;
  call.cluster_id = request.cluster_id;
  call.client_ts = request.client_ts;
  call.deadline_ms = request.deadline_ms;
  call.consistency = request.consistency;
  call.forwarded = request.forwarded;
  if (const auto* install = std::get_if<net::InstallMapRequest>(&request.body)) {
    call.adopt = install->adopt;
  }
  // `relayed_ts`: the timestamp of the coordinator's reply to a request this node sent on.
  auto reply = [this, done = std::move(done), start, op, client_op, request_epoch = request.epoch,
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
    if (client_op) internal::PlainNoSpace(&body);
    d_.stats->RecordRequest(op, static_cast<uint64_t>(micros), StatusOf(body), client_op);
    response.body = std::move(body);
    done(std::move(response));
  };

  Admission admission = Admit(guards, OpUnformed(op), call);
  switch (admission.kind) {
    case Admission::Kind::kRefuse:
      return reply(Error(admission.refusal));
    case Admission::Kind::kSendOn:
      request.forwarded = true;
      return SendOn(admission.send_to, std::move(request),
                    [reply = std::move(reply)](net::ResponseBody body, uint64_t ts) mutable {
                      reply(std::move(body), ts);
                    });
    case Admission::Kind::kAwaitEpoch: {
      auto held = std::make_shared<net::Request>(std::move(request));
      d_.membership->AwaitEpoch(
          call.epoch, admission.wait,
          [this, held, call, guards, op, reply = std::move(reply)](bool) mutable {
            call.map = d_.maps->Current();
            if (Status s = AtDispatch(guards, call, /*waited=*/true); !s.ok()) {
              return reply(Error(s));
            }
            RunNative(op, call, held->body, std::move(reply));
          });
      return;
    }
    case Admission::Kind::kRun:
      break;
  }
  // Without a wait, only a replica write's deadline is left to check (a call skipped per op).
  if ((guards & kGuardReplicaDeadline) != 0) {
    if (Status s = AtDispatch(guards, call, /*waited=*/false); !s.ok()) return reply(Error(s));
  }
  RunNative(op, call, request.body, std::move(reply));
}

KvService::Admission KvService::Admit(uint32_t guards, Unformed unformed, Call& call) {
  // Formed. No map: the node is unformed (ready), or still loading its map (not ready). Either
  // way it answers what `cluster init` and `cluster join` need to look at it and form it, and
  // nothing that would need a map. The "unformed:" prefix of getClusterMap's refusal is the
  // contract those commands test for.
  if (!call.map) {
    const bool ready = ready_.load();
    switch (unformed) {
      case Unformed::kServe:
        return Admission{};
      case Unformed::kAdoptOnly:
        if (call.adopt && d_.membership != nullptr) return Admission{};
        break;
      case Unformed::kNoMap:
        if (ready) {
          return Refuse(Status(Status::Code::kFailedPrecondition, Status::Reason::kUnformed,
                               "unformed: node " + std::to_string(d_.self_id) +
                                   " has no cluster map (not in a cluster yet)"));
        }
        break;
      case Unformed::kRefuse:
        break;
    }
    return Refuse(ready ? Status(Status::Code::kUnavailable, Status::Reason::kUnformed,
                                 UnformedMessage(d_.self_id))
                        : Status(Status::Code::kUnavailable, Status::Reason::kStarting,
                                 "node " + std::to_string(d_.self_id) +
                                     " is starting (loading its cluster map)"));
  }
  const ClusterMap& map = *call.map;
  if ((guards & kGuardReady) != 0 && !call.adopt && !ready_.load()) {
    return Refuse(Status(
        Status::Code::kUnavailable, Status::Reason::kStarting,
        "node " + std::to_string(d_.self_id) + " is starting (fetching the newest cluster map)"));
  }
  if ((guards & kGuardClusterId) != 0 && call.cluster_id != 0 &&
      call.cluster_id != map.cluster_id() && !call.adopt) {
    return Refuse(Status(Status::Code::kFailedPrecondition, Status::Reason::kWrongCluster,
                         "request for cluster " + std::to_string(call.cluster_id) +
                             " reached node " + std::to_string(d_.self_id) + " of cluster " +
                             std::to_string(map.cluster_id())));
  }
  // A node cut off from the cluster's leader may hold an old map: it does not coordinate.
  if ((guards & kGuardFence) != 0 && d_.consensus != nullptr) {
    if (Status fenced = d_.consensus->Fence(); !fenced.ok()) return Refuse(std::move(fenced));
  }
  // A node whose clock is off the cluster's assigns no timestamps: a node whose clock agrees
  // coordinates the request instead (once: a forwarded request is never sent on again). Before
  // the deadline check: this node's clock cannot tell whether the client's deadline passed (one
  // 1.25 s ahead dropped every fresh request as late), the coordinator's can.
  if ((guards & kGuardSendOn) != 0 && !call.forwarded && d_.peers != nullptr &&
      d_.membership != nullptr) {
    if (std::string to = d_.membership->HealthyCoordinator(); !to.empty()) {
      sent_on_.fetch_add(1, std::memory_order_relaxed);
      Admission a;
      a.kind = Admission::Kind::kSendOn;
      a.send_to = std::move(to);
      return a;
    }
  }
  if ((guards & kGuardDeadline) != 0) {
    if (std::optional<Status> late = LateDrop(call.deadline_ms, d_.self_id)) {
      late_.fetch_add(1, std::memory_order_relaxed);
      return Refuse(std::move(*late));
    }
  }
  // A node whose storage fails cannot stamp or keep a write: Unavailable sends the client to
  // another node (design.md "Storage format": Storage health).
  if ((guards & kGuardStorage) != 0) {
    if (Status sick = StorageWriteRefusal(*d_.storage, d_.self_id); !sick.ok()) {
      return Refuse(std::move(sick));
    }
  }
  if (call.client_ts != 0) {
    Status s = d_.storage->clock().Update(call.client_ts);
    // Stats, ping and map requests answer even when the clock cannot move (its ceiling cannot
    // be persisted on a failing disk): they take no timestamp, and stats is how an operator
    // sees the failure.
    if (!s.ok() && (guards & kGuardClock) != 0) {
      return Refuse(
          s.WithContext("client timestamp rejected").WithReason(Status::Reason::kClockRejected));
    }
  }
  if ((guards & kGuardEpoch) != 0 && call.epoch > map.epoch() && d_.membership != nullptr) {
    // The sender knows a newer map: get it before serving (design.md "Propagation").
    // The wait ends by the client's deadline at the latest, and a client op whose deadline
    // passed meanwhile is dropped (AtDispatch): its client has retried elsewhere and may have
    // written newer versions since, which a write stamped now would overwrite (seen on the bed:
    // a put held here across a map install undid an acknowledged delete of the same key).
    Admission a;
    a.kind = Admission::Kind::kAwaitEpoch;
    a.wait = std::chrono::milliseconds(2000);
    if ((guards & kGuardDeadline) != 0 && call.deadline_ms != 0) {
      const uint64_t now_ms = common::HlcClock::WallClockMs();
      a.wait = std::min<std::chrono::milliseconds>(
          a.wait,
          std::chrono::milliseconds(call.deadline_ms > now_ms ? call.deadline_ms - now_ms : 0));
    }
    return a;
  }
  return Admission{};
}

Status KvService::AtDispatch(uint32_t guards, const Call& call, bool waited) {
  if (waited && (guards & kGuardDeadline) != 0) {
    if (std::optional<Status> late = LateDrop(call.deadline_ms, d_.self_id)) {
      late_.fetch_add(1, std::memory_order_relaxed);
      return std::move(*late);
    }
  }
  if ((guards & kGuardReplicaDeadline) != 0) {
    if (std::optional<Status> late =
            LateReplicaWrite(call.deadline_ms, d_.max_clock_offset_ms, d_.self_id)) {
      return std::move(*late);
    }
  }
  return Status::OK();
}

void KvService::SendOn(const std::string& address, net::Request request,
                       std::function<void(net::ResponseBody, uint64_t ts)> done) {
  // The default client timeout, not the client's deadline: this node's clock is the one that is
  // off, so it cannot tell how long the client still waits. The coordinator it sends to checks
  // the deadline on its clock and answers Timeout for a request past it. `done` gets the
  // coordinator's reply timestamp, which the relayed reply carries instead of this node's: a
  // skewed clock's timestamp would make every healthy node refuse the client that relays it.
  const auto timeout = std::chrono::milliseconds(5000);
  d_.peers->Call(address, std::move(request), timeout,
                 [address, done = std::move(done)](StatusOr<net::Response> r) {
                   if (r.ok()) return done(std::move(r->body), r->ts);
                   done(net::ErrorResponse::Of(r.status().WithContext(
                            "sent on to " + address + " (this node's clock is skewed)")),
                        0);
                 });
}

std::string UnformedMessage(uint32_t node_id) {
  return "node " + std::to_string(node_id) +
         " is unformed (not in a cluster yet): form a cluster with `shardkv cluster init` or "
         "add it with `shardkv cluster join`";
}

}  // namespace shardkv::node
