#include "shardkv/client.h"

#include <future>
#include <map>

#include "client/client_core.h"
#include "net/rpc_client.h"
#include "net/tls_context.h"

namespace shardkv {
namespace {

template <typename T>
StatusOr<T> Wait(std::future<StatusOr<T>> f) {
  return f.get();
}

}  // namespace

Client::Client(std::shared_ptr<Core> core) : core_(std::move(core)) {}

Client::~Client() { core_->Close(); }

StatusOr<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  if (options.seeds.empty()) return Status::InvalidArgument("no seed addresses given");
  if (options.max_retries < 0) return Status::InvalidArgument("max_retries must be >= 0");
  // A malformed address is the caller's mistake, not an unreachable node: say so up front.
  for (const std::string& seed : options.seeds) {
    std::string host;
    uint16_t port = 0;
    SHARDKV_RETURN_IF_ERROR(net::ParseHostPort(seed, &host, &port));
  }
  auto security = net::LoadClientSecurity(
      options.auth_secret_file,
      net::TlsFiles{options.tls_ca_file, options.tls_cert_file, options.tls_key_file});
  if (!security.ok()) return security.status();
  auto core = std::make_shared<Core>(std::move(options), std::move(*security));
  Status s = core->RefreshMap();
  if (!s.ok()) {
    core->Close();
    return s;
  }
  return std::unique_ptr<Client>(new Client(std::move(core)));
}

std::shared_ptr<const ClusterMap> Client::map() const { return core_->map(); }
Status Client::RefreshMap() { return core_->RefreshMap(); }
uint64_t Client::max_seen_timestamp() const { return core_->max_seen_ts(); }
uint64_t Client::cluster_id() const { return core_->cluster_id(); }

void Client::GetAsync(std::string key, ValueCallback done, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::GetRequest{token, std::move(key)};
  core_->Send(std::move(req), token, {}, [done = std::move(done)](StatusOr<net::Response> r) {
    auto body = Expect<net::GetResponse>(r);
    if (!body.ok()) return done(body.status());
    if (!(*body)->found) return done(Status::NotFound("not found"));
    if ((*body)->kind != net::ValueKind::kString) return done(net::WrongTypeError());
    done(std::move((*body)->value));
  });
}

void Client::PutAsync(std::string key, std::string value, WriteCallback done, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::PutRequest{token, std::move(key), std::move(value)};
  core_->Send(std::move(req), token, {}, [done = std::move(done)](StatusOr<net::Response> r) {
    auto body = Expect<net::PutResponse>(r);
    if (!body.ok()) return done(body.status());
    done((*body)->ts);
  });
}

void Client::DeleteAsync(std::string key, WriteCallback done, Consistency c) {
  auto m = core_->map();
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  const uint64_t token = m->TokenOf(key);
  req.body = net::DeleteRequest{token, std::move(key)};
  core_->Send(std::move(req), token, {}, [done = std::move(done)](StatusOr<net::Response> r) {
    auto body = Expect<net::DeleteResponse>(r);
    if (!body.ok()) return done(body.status());
    done((*body)->ts);
  });
}

StatusOr<std::string> Client::Get(std::string_view key, Consistency c) {
  std::promise<StatusOr<std::string>> p;
  GetAsync(
      std::string(key), [&p](StatusOr<std::string> r) { p.set_value(std::move(r)); }, c);
  return Wait(p.get_future());
}

StatusOr<uint64_t> Client::Put(std::string_view key, std::string_view value, Consistency c) {
  std::promise<StatusOr<uint64_t>> p;
  PutAsync(
      std::string(key), std::string(value),
      [&p](StatusOr<uint64_t> r) { p.set_value(std::move(r)); }, c);
  return Wait(p.get_future());
}

StatusOr<uint64_t> Client::Delete(std::string_view key, Consistency c) {
  std::promise<StatusOr<uint64_t>> p;
  DeleteAsync(
      std::string(key), [&p](StatusOr<uint64_t> r) { p.set_value(std::move(r)); }, c);
  return Wait(p.get_future());
}

namespace {

// Splits item indexes by the coordinator of their token (first replica under `map`).
std::map<uint32_t, std::vector<size_t>> GroupByCoordinator(const ClusterMap& map,
                                                           const std::vector<uint64_t>& tokens) {
  std::map<uint32_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < tokens.size(); ++i) {
    auto replicas = map.ReadReplicas(tokens[i]);
    groups[replicas.empty() ? 0 : replicas.front()].push_back(i);
  }
  return groups;
}

}  // namespace

namespace {

// Sends one Batch per coordinator of `tokens` (in parallel) and fills out[i] for every input i,
// blocking until every batch has replied. `add(batch, i)` appends input i to a batch;
// `convert(item)` turns a successful reply item into the caller's result.
template <typename Batch, typename ReplyBody, typename Result, typename Add, typename Convert>
void SendBatches(Client::Core& core, const ClusterMap& map, const std::vector<uint64_t>& tokens,
                 net::Consistency consistency, std::vector<StatusOr<Result>>& out, Add add,
                 Convert convert) {
  auto groups = GroupByCoordinator(map, tokens);
  std::vector<std::future<void>> pending;
  for (auto& [node, idx] : groups) {
    Batch batch;
    for (size_t i : idx) add(batch, i);
    net::Request req;
    req.consistency = consistency;
    req.body = std::move(batch);
    auto done = std::make_shared<std::promise<void>>();
    pending.push_back(done->get_future());
    // `&idx = idx`, not `&idx`: clang before 16 cannot capture a structured binding.
    core.Send(std::move(req), tokens[idx.front()], {},
              [&out, &idx = idx, &convert, done](StatusOr<net::Response> r) {
                auto body = Expect<ReplyBody>(r);
                for (size_t k = 0; k < idx.size(); ++k) {
                  if (!body.ok()) {
                    out[idx[k]] = body.status();
                  } else if (k >= (*body)->results.size()) {
                    out[idx[k]] = Status::Corruption("short batch reply");
                  } else if (!(*body)->results[k].status.ok()) {
                    out[idx[k]] = (*body)->results[k].status;
                  } else {
                    out[idx[k]] = convert((*body)->results[k]);
                  }
                }
                done->set_value();
              });
  }
  for (auto& f : pending) f.wait();
}

}  // namespace

std::vector<StatusOr<std::string>> Client::MultiGet(const std::vector<std::string>& keys,
                                                    Consistency c) {
  std::vector<StatusOr<std::string>> out(keys.size(), Status::Internal("no reply"));
  if (keys.empty()) return out;
  auto m = core_->map();
  std::vector<uint64_t> tokens;
  for (const auto& k : keys) tokens.push_back(m->TokenOf(k));
  SendBatches<net::MultiGetRequest, net::MultiGetResponse>(
      *core_, *m, tokens, core_->WireConsistency(c), out,
      [&](net::MultiGetRequest& batch, size_t i) {
        batch.keys.push_back({tokens[i], keys[i]});
      },
      [](const net::ItemResult& item) -> StatusOr<std::string> {
        if (!item.found) return Status::NotFound("not found");
        return item.value;
      });
  return out;
}

std::vector<StatusOr<uint64_t>> Client::MultiPut(
    const std::vector<std::pair<std::string, std::string>>& items, Consistency c) {
  std::vector<StatusOr<uint64_t>> out(items.size(), Status::Internal("no reply"));
  if (items.empty()) return out;
  auto m = core_->map();
  std::vector<uint64_t> tokens;
  for (const auto& kv : items) tokens.push_back(m->TokenOf(kv.first));
  SendBatches<net::MultiPutRequest, net::MultiPutResponse>(
      *core_, *m, tokens, core_->WireConsistency(c), out,
      [&](net::MultiPutRequest& batch, size_t i) {
        batch.items.push_back({tokens[i], items[i].first, items[i].second});
      },
      [](const net::ItemResult& item) -> StatusOr<uint64_t> { return item.ts; });
  return out;
}

Status ParseHostPort(const std::string& address, std::string* host, uint16_t* port) {
  return net::ParseHostPort(address, host, port);
}

StatusOr<ScanPage> Client::Scan(uint64_t cursor, const ScanOptions& options, Consistency c) {
  std::promise<StatusOr<ScanPage>> p;
  net::Request req;
  req.consistency = core_->WireConsistency(c);
  req.body = net::ScanRequest{cursor, options.count, options.match};
  // Routed by the cursor's token: the node that coordinates it usually holds that range, so the
  // first piece of the batch is read locally. A cursor past every placed token (jump mode: above
  // the last shard, from a caller that made it up) goes anywhere: the node answers 0.
  auto m = core_->map();
  const uint64_t route = m->ReadReplicas(cursor).empty() ? 0 : cursor;
  core_->Send(std::move(req), route, {}, [&](StatusOr<net::Response> r) {
    auto body = Expect<net::ScanResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    p.set_value(ScanPage{std::move((*body)->keys), (*body)->cursor});
  });
  return Wait(p.get_future());
}

StatusOr<NodeStatsSnapshot> Client::NodeStats(const std::string& address) {
  std::promise<StatusOr<NodeStatsSnapshot>> p;
  net::Request req;
  req.body = net::StatsRequest{};
  core_->Send(std::move(req), std::nullopt, address, [&](StatusOr<net::Response> r) {
    auto body = Expect<net::StatsResponse>(r);
    if (!body.ok()) return p.set_value(body.status());
    p.set_value(NodeStatsSnapshot{address, (*body)->counters, (*body)->gauges, (*body)->info});
  });
  return Wait(p.get_future());
}

}  // namespace shardkv
