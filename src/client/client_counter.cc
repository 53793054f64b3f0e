// Client's counter operation (shardkv/client.h Incr; design.md "Counters").
#include <future>
#include <string>

#include "client/client_core.h"
#include "shardkv/client.h"

namespace shardkv {

StatusOr<int64_t> Client::Incr(std::string_view key, int64_t delta, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::IncrRequest{token, std::string(key), delta};
  std::promise<StatusOr<int64_t>> p;
  core_->Send(std::move(req), token, {}, [&p](StatusOr<net::Response> r) {
    auto body = Expect<net::IncrResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    p.set_value((*body)->value);
  });
  return p.get_future().get();
}

}  // namespace shardkv
