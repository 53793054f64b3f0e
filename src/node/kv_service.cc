#include "node/kv_service.h"

#include <array>
#include <chrono>
#include <type_traits>

namespace shardkv {
namespace {

net::ResponseBody Error(const Status& s) { return net::ErrorResponse{s.code(), s.message()}; }

// Stats names per net::RequestBody alternative, in its order.
constexpr std::array<std::string_view, 8> kOpNames = {
    "ping", "get", "put", "delete", "multi_get", "multi_put", "stats", "get_cluster_map"};
static_assert(std::variant_size_v<net::RequestBody> == kOpNames.size(),
              "name every request op for stats");

Status StatusOf(const net::ResponseBody& body) {
  if (const auto* e = std::get_if<net::ErrorResponse>(&body)) return e->ToStatus();
  return Status::OK();
}

}  // namespace

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
  net::Response response = Serve(request);
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  stats_->RecordRequest(request.body.index(), static_cast<uint64_t>(micros),
                        StatusOf(response.body));
  done(std::move(response));
}

net::Response KvService::Serve(const net::Request& request) {
  net::Response response;
  response.id = request.id;
  std::shared_ptr<const ClusterMap> map = maps_->Current();
  if (!map) {
    response.body = Error(Status::Unavailable("node has no cluster map yet"));
    return response;
  }
  response.epoch = map->epoch();
  if (request.cluster_id != 0 && request.cluster_id != map->cluster_id()) {
    response.body = Error(Status::FailedPrecondition(
        "request for cluster " + std::to_string(request.cluster_id) +
        " reached a node of cluster " + std::to_string(map->cluster_id())));
    return response;
  }
  // A client's second write must win over its first even through a coordinator with a slower
  // clock: move this node's clock past the newest timestamp the client has seen.
  if (request.client_ts != 0) {
    Status s = storage_->clock().Update(request.client_ts);
    if (!s.ok()) {
      response.body = Error(s.WithContext("client timestamp rejected"));
      return response;
    }
  }
  response.body = std::visit(
      [&](const auto& op) -> net::ResponseBody {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, net::PingRequest>) {
          return net::PingResponse{};
        } else if constexpr (std::is_same_v<T, net::GetRequest>) {
          return Get(*map, op);
        } else if constexpr (std::is_same_v<T, net::PutRequest>) {
          return Put(*map, op);
        } else if constexpr (std::is_same_v<T, net::DeleteRequest>) {
          return Delete(*map, op);
        } else if constexpr (std::is_same_v<T, net::MultiGetRequest>) {
          return MultiGet(*map, op);
        } else if constexpr (std::is_same_v<T, net::MultiPutRequest>) {
          return MultiPut(*map, op);
        } else if constexpr (std::is_same_v<T, net::StatsRequest>) {
          return Stats();
        } else if constexpr (std::is_same_v<T, net::GetClusterMapRequest>) {
          return net::GetClusterMapResponse{map->Encode()};
        } else {
          return Error(Status::NotSupported("operation not supported by this node"));
        }
      },
      request.body);
  // A sender with an older map gets the newer one in the same reply (Redis's MOVED, without
  // the failure), so it can refresh without another round trip.
  if (request.epoch != 0 && request.epoch < map->epoch()) response.cluster_map = map->Encode();
  response.ts = storage_->clock().Last();
  return response;
}

net::ResponseBody KvService::Get(const ClusterMap& map, const net::GetRequest& r) {
  if (Status s = CheckKey(r.key); !s.ok()) return Error(s);
  auto env = storage_->GetEnvelope(map.TokenOf(r.key), r.key);
  net::GetResponse out;
  if (env.ok()) {
    out.ts = env->timestamp;
    out.found = !env->tombstone;
    if (out.found) out.value = std::move(env->value);
  } else if (!env.status().IsNotFound()) {
    return Error(env.status());
  }
  return out;
}

net::ResponseBody KvService::Put(const ClusterMap& map, const net::PutRequest& r) {
  if (Status s = CheckKey(r.key); !s.ok()) return Error(s);
  if (Status s = CheckValue(r.value); !s.ok()) return Error(s);
  auto written = storage_->Put(map.TokenOf(r.key), r.key, r.value);
  if (!written.ok()) return Error(written.status());
  return net::PutResponse{written->written.timestamp};
}

net::ResponseBody KvService::Delete(const ClusterMap& map, const net::DeleteRequest& r) {
  if (Status s = CheckKey(r.key); !s.ok()) return Error(s);
  auto written = storage_->Delete(map.TokenOf(r.key), r.key);
  if (!written.ok()) return Error(written.status());
  return net::DeleteResponse{written->written.timestamp};
}

net::ResponseBody KvService::MultiGet(const ClusterMap& map, const net::MultiGetRequest& r) {
  net::MultiGetResponse out;
  out.results.resize(r.keys.size());
  std::vector<KeyRef> refs;
  std::vector<size_t> positions;
  for (size_t i = 0; i < r.keys.size(); ++i) {
    if (Status s = CheckKey(r.keys[i].key); !s.ok()) {
      out.results[i].status = s;
      continue;
    }
    refs.push_back({map.TokenOf(r.keys[i].key), r.keys[i].key});
    positions.push_back(i);
  }
  // One RocksDB MultiGet for the whole batch: it shares block lookups and is what makes
  // pipelined reads cheap.
  auto envelopes = storage_->MultiGetEnvelopes(refs);
  for (size_t k = 0; k < envelopes.size(); ++k) {
    net::ItemResult& item = out.results[positions[k]];
    if (envelopes[k].ok()) {
      item.ts = envelopes[k]->timestamp;
      item.found = !envelopes[k]->tombstone;
      if (item.found) item.value = std::move(envelopes[k]->value);
    } else if (!envelopes[k].status().IsNotFound()) {
      item.status = envelopes[k].status();
    }
  }
  return out;
}

net::ResponseBody KvService::MultiPut(const ClusterMap& map, const net::MultiPutRequest& r) {
  net::MultiPutResponse out;
  out.results.resize(r.items.size());
  for (size_t i = 0; i < r.items.size(); ++i) {
    const net::PutRequest& item = r.items[i];
    Status s = CheckKey(item.key);
    if (s.ok()) s = CheckValue(item.value);
    if (!s.ok()) {
      out.results[i].status = s;
      continue;
    }
    auto written = storage_->Put(map.TokenOf(item.key), item.key, item.value);
    if (written.ok()) {
      out.results[i].ts = written->written.timestamp;
    } else {
      out.results[i].status = written.status();
    }
  }
  return out;
}

net::ResponseBody KvService::Stats() {
  net::StatsResponse out;
  out.counters["uptime_s"] = static_cast<int64_t>(stats_->UptimeSeconds());
  for (size_t op = 0; op < kOpNames.size(); ++op) {
    out.counters["ops." + std::string(kOpNames[op])] = static_cast<int64_t>(stats_->OpCount(op));
  }
  out.counters["client_errors"] = static_cast<int64_t>(stats_->client_errors());
  if (server_stats_) {
    const net::Server::Stats s = server_stats_();
    out.counters["connections"] = static_cast<int64_t>(s.open_connections);
    out.counters["connections_total"] = static_cast<int64_t>(s.accepted_connections);
    out.counters["bad_frames"] = static_cast<int64_t>(s.bad_frames);
  }
  auto range = storage_->ApproximateRangeStats(TokenRange{0, UINT64_MAX});
  if (range.ok()) {
    out.counters["keys_approx"] = static_cast<int64_t>(range->approximate_keys);
    out.counters["bytes_approx"] = static_cast<int64_t>(range->approximate_bytes);
  }
  out.gauges["latency_p50_us"] = static_cast<double>(stats_->latency().Percentile(0.50));
  out.gauges["latency_p99_us"] = static_cast<double>(stats_->latency().Percentile(0.99));
  out.gauges["latency_p999_us"] = static_cast<double>(stats_->latency().Percentile(0.999));
  return out;
}

}  // namespace shardkv
