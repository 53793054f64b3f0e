// KvService's expiry operations: TTL checks for puts and the expire op (EXPIRE / PERSIST).
#include <memory>
#include <string>
#include <utility>

#include "node/kv_service.h"

namespace shardkv::node {
namespace {

// Redis keeps expiry times as signed 64-bit milliseconds; so does the wire's contract here, so a
// RESP client and a native one see the same limit.
constexpr uint64_t kMaxExpiresAtMs = uint64_t{INT64_MAX};

}  // namespace

Status KvService::CheckTtl(uint64_t ttl_ms) const {
  if (ttl_ms == 0) return Status::OK();
  const uint64_t now = d_.storage->WallClockMs();
  if (ttl_ms > kMaxExpiresAtMs - now) {
    return Status::InvalidArgument("invalid expire time: a TTL of " + std::to_string(ttl_ms) +
                                   " ms overflows the expiry timestamp");
  }
  return Status::OK();
}

cluster::WriteSpec KvService::PutSpec(net::PutRequest& r) {
  cluster::WriteSpec spec;
  spec.value = std::move(r.value);
  spec.ttl_ms = r.ttl_ms;
  spec.keep_ttl = r.keep_ttl;
  return spec;
}

// Why read first: EXPIRE on a missing key is a no-op in Redis (reply 0), and the client API
// reports NotFound. The read and the expiry write are two steps, so a concurrent DEL from
// another coordinator can land between them; the expiry write then only touches the expiry
// register, so it can hide nothing newer than itself (design.md "Expiry").
void KvService::Serve(const Call& call, net::ExpireRequest& r, net::OpDone<net::PutResponse> done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  if (r.expires_at_ms > kMaxExpiresAtMs) {
    return done(Status::InvalidArgument("invalid expire time: " + std::to_string(r.expires_at_ms) +
                                        " ms is past the largest expiry timestamp"));
  }
  const std::shared_ptr<const ClusterMap>& map = call.map;
  const net::Consistency c = call.consistency;
  const uint64_t token = map->TokenOf(r.key);
  std::string key = r.key;
  const uint64_t expires_at = r.expires_at_ms;
  auto coordinator = d_.coordinator;
  storage::Storage* storage = d_.storage;
  coordinator->Read(map, token, std::move(r.key), c,
                    [map, token, key = std::move(key), expires_at, c, coordinator, storage,
                     done = std::move(done)](StatusOr<storage::Envelope> env) mutable {
                      const uint64_t now = storage->WallClockMs();
                      if (env.ok() && !env->LiveAt(now)) env = Status::NotFound("key not found");
                      if (!env.ok()) return done(env.status());
                      cluster::WriteSpec spec;
                      if (expires_at != 0 && expires_at <= now) {
                        // An expiry already past deletes the key, as in Redis.
                        spec.kind = cluster::WriteSpec::Kind::kDelete;
                      } else {
                        spec.kind = cluster::WriteSpec::Kind::kExpire;
                        spec.expires_at_ms = expires_at;
                      }
                      auto reply = [done = std::move(done)](StatusOr<uint64_t> ts) mutable {
                        if (!ts.ok()) return done(ts.status());
                        done(net::PutResponse{*ts});
                      };
                      if (!env->ExpiredAt(now) || spec.kind == cluster::WriteSpec::Kind::kDelete) {
                        return coordinator->Write(map, token, std::move(key), std::move(spec), c,
                                                  std::move(reply));
                      }
                      // A counter that outlived its record's expiry (counts from nothing begun
                      // after it): the expired value is first made the tombstone it amounts to,
                      // so the new expiry register cannot bring it back to life.
                      cluster::WriteSpec death;
                      death.kind = cluster::WriteSpec::Kind::kMerge;
                      death.record = storage::Envelope::Plain(env->ExpiryDeath(), true, "");
                      coordinator->Write(map, token, key, std::move(death), c,
                                         [map, token, key, c, coordinator, spec = std::move(spec),
                                          reply = std::move(reply)](StatusOr<uint64_t> ts) mutable {
                                           if (!ts.ok()) return reply(std::move(ts));
                                           coordinator->Write(map, token, std::move(key),
                                                              std::move(spec), c, std::move(reply));
                                         });
                    });
}

}  // namespace shardkv::node
