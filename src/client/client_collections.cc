// Client's hash and set operations (shardkv/client.h HSet, HDel, HGetAll; SAdd, SRem, SMembers;
// design.md "Hashes", "Sets").
#include <future>
#include <string>

#include "client/client_core.h"
#include "shardkv/client.h"

namespace shardkv {
namespace {

// Sends a hash or set write `w` (HashWriteRequest or SetWriteRequest) and returns the count it
// answers. `core` is the Client's Core (a template only so that its private type need not be
// named).
template <typename Response, typename Core, typename Request>
StatusOr<uint32_t> SendCountedWrite(Core* core, std::string_view key, Request w, Consistency c) {
  auto m = core->map();
  net::Request req;
  req.consistency = core->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  w.token = token;
  w.key = std::string(key);
  req.body = std::move(w);
  std::promise<StatusOr<uint32_t>> p;
  core->Send(std::move(req), token, {}, [&p](StatusOr<net::Response> r) {
    auto body = Expect<Response>(r);
    if (!body.ok()) return p.set_value(body.status());
    p.set_value((*body)->changed);
  });
  return p.get_future().get();
}

}  // namespace

StatusOr<uint32_t> Client::HSet(std::string_view key,
                                const std::vector<std::pair<std::string, std::string>>& fields,
                                bool only_new, Consistency c) {
  if (fields.empty()) return Status::InvalidArgument("HSet needs at least one field");
  net::HashWriteRequest w;
  for (const auto& [name, value] : fields) w.set.push_back({name, value});
  w.only_new = only_new;
  return SendCountedWrite<net::HashWriteResponse>(core_.get(), key, std::move(w), c);
}

StatusOr<uint32_t> Client::HDel(std::string_view key, const std::vector<std::string>& fields,
                                Consistency c) {
  if (fields.empty()) return Status::InvalidArgument("HDel needs at least one field");
  net::HashWriteRequest w;
  w.remove = fields;
  return SendCountedWrite<net::HashWriteResponse>(core_.get(), key, std::move(w), c);
}

StatusOr<std::map<std::string, std::string>> Client::HGetAll(std::string_view key, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::HashReadRequest{token, std::string(key)};
  std::promise<StatusOr<std::map<std::string, std::string>>> p;
  core_->Send(std::move(req), token, {}, [&p](StatusOr<net::Response> r) {
    auto body = Expect<net::HashReadResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    if (!(*body)->found) return p.set_value(Status::NotFound("key not found"));
    std::map<std::string, std::string> out;
    for (net::HashFieldValue& f : (*body)->fields)
      out.emplace(std::move(f.name), std::move(f.value));
    p.set_value(std::move(out));
  });
  return p.get_future().get();
}

StatusOr<uint32_t> Client::SAdd(std::string_view key, const std::vector<std::string>& members,
                                Consistency c) {
  if (members.empty()) return Status::InvalidArgument("SAdd needs at least one member");
  net::SetWriteRequest w;
  w.add = members;
  return SendCountedWrite<net::SetWriteResponse>(core_.get(), key, std::move(w), c);
}

StatusOr<uint32_t> Client::SRem(std::string_view key, const std::vector<std::string>& members,
                                Consistency c) {
  if (members.empty()) return Status::InvalidArgument("SRem needs at least one member");
  net::SetWriteRequest w;
  w.remove = members;
  return SendCountedWrite<net::SetWriteResponse>(core_.get(), key, std::move(w), c);
}

StatusOr<std::vector<std::string>> Client::SMembers(std::string_view key, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::SetReadRequest{token, std::string(key)};
  std::promise<StatusOr<std::vector<std::string>>> p;
  core_->Send(std::move(req), token, {}, [&p](StatusOr<net::Response> r) {
    auto body = Expect<net::SetReadResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    if (!(*body)->found) return p.set_value(Status::NotFound("key not found"));
    p.set_value(std::move((*body)->members));
  });
  return p.get_future().get();
}

}  // namespace shardkv
