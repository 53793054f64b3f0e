// Client's expiry operations (shardkv/client.h "Expiry").
#include <chrono>
#include <future>

#include "client/client_core.h"
#include "shardkv/client.h"

namespace shardkv {
namespace {

uint64_t WallClockMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

Status CheckPutOptions(const PutOptions& options) {
  if (options.ttl.count() < 0) {
    return Status::InvalidArgument("invalid expire time: the TTL must not be negative");
  }
  if (options.keep_ttl && options.ttl.count() != 0) {
    return Status::InvalidArgument("keep_ttl and a TTL are mutually exclusive");
  }
  return Status::OK();
}

}  // namespace

void Client::PutAsync(std::string key, std::string value, const PutOptions& options,
                      WriteCallback done, Consistency c) {
  if (Status s = CheckPutOptions(options); !s.ok()) return done(s);
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::PutRequest{token, std::move(key), std::move(value),
                             static_cast<uint64_t>(options.ttl.count()), options.keep_ttl};
  core_->Send(std::move(req), token, {}, [done = std::move(done)](StatusOr<net::Response> r) {
    auto body = Expect<net::PutResponse>(r);
    if (!body.ok()) return done(body.status());
    done((*body)->ts);
  });
}

StatusOr<uint64_t> Client::Put(std::string_view key, std::string_view value,
                               const PutOptions& options, Consistency c) {
  std::promise<StatusOr<uint64_t>> p;
  PutAsync(
      std::string(key), std::string(value), options,
      [&p](StatusOr<uint64_t> r) { p.set_value(std::move(r)); }, c);
  return p.get_future().get();
}

namespace {

// expires_at_ms 0 = persist.
StatusOr<uint64_t> SendExpire(Client::Core& core, std::string_view key, uint64_t expires_at_ms,
                              Consistency c) {
  auto m = core.map();
  net::Request req;
  req.consistency = core.WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::ExpireRequest{token, std::string(key), expires_at_ms};
  std::promise<StatusOr<uint64_t>> p;
  core.Send(std::move(req), token, {}, [&p](StatusOr<net::Response> r) {
    auto body = Expect<net::PutResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    p.set_value((*body)->ts);
  });
  return p.get_future().get();
}

}  // namespace

StatusOr<uint64_t> Client::Expire(std::string_view key, std::chrono::milliseconds ttl,
                                  Consistency c) {
  // ttl <= 0: an expiry time in the past, which deletes the key (the node decides "past").
  const int64_t now = static_cast<int64_t>(WallClockMs());
  const int64_t count = ttl.count();
  if (count > 0 && count > INT64_MAX - now) {
    return Status::InvalidArgument("invalid expire time: the TTL overflows the expiry time");
  }
  const uint64_t at = count <= 0 ? 1 : static_cast<uint64_t>(now + count);
  return SendExpire(*core_, key, at, c);
}

StatusOr<uint64_t> Client::ExpireAt(std::string_view key, uint64_t unix_ms, Consistency c) {
  if (unix_ms == 0) return Status::InvalidArgument("an expiry time of 0: use Persist");
  return SendExpire(*core_, key, unix_ms, c);
}

StatusOr<uint64_t> Client::Persist(std::string_view key, Consistency c) {
  return SendExpire(*core_, key, 0, c);
}

StatusOr<Client::ValueWithExpiry> Client::GetWithExpiry(std::string_view key, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::GetRequest{token, std::string(key)};
  std::promise<StatusOr<ValueWithExpiry>> p;
  core_->Send(std::move(req), token, {}, [&p](StatusOr<net::Response> r) {
    auto body = Expect<net::GetResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    if (!(*body)->found) return p.set_value(Status::NotFound("not found"));
    p.set_value(ValueWithExpiry{std::move((*body)->value), (*body)->expires_at_ms});
  });
  return p.get_future().get();
}

StatusOr<std::optional<std::chrono::milliseconds>> Client::Ttl(std::string_view key,
                                                               Consistency c) {
  SHARDKV_ASSIGN_OR_RETURN(ValueWithExpiry v, GetWithExpiry(key, c));
  if (v.expires_at_ms == 0) return std::optional<std::chrono::milliseconds>();
  const uint64_t now = WallClockMs();
  const uint64_t left = v.expires_at_ms > now ? v.expires_at_ms - now : 0;
  return std::optional<std::chrono::milliseconds>(
      std::chrono::milliseconds(static_cast<int64_t>(left)));
}

}  // namespace shardkv
