// A fake of what the Redis command layer talks to: an in-memory request handler (multiGet,
// multiPut, delete, stats) that counts its calls, and a cluster view without a cluster.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "net/server.h"
#include "redis/cluster_view.h"

namespace shardkv::redis::testing {

class FakeHandler : public net::RequestHandler {
 public:
  void Handle(net::Request request, std::function<void(net::Response)> done) override {
    net::Response response;
    ++calls;
    consistencies.push_back(request.consistency);
    if (auto* get = std::get_if<net::MultiGetRequest>(&request.body)) {
      ++multi_gets;
      net::MultiGetResponse out;
      for (const auto& k : get->keys) {
        net::ItemResult item;
        auto it = data.find(k.key);
        item.found = it != data.end();
        if (item.found) item.value = it->second;
        out.results.push_back(item);
      }
      response.body = out;
    } else if (auto* put = std::get_if<net::MultiPutRequest>(&request.body)) {
      ++multi_puts;
      net::MultiPutResponse out;
      for (const auto& item : put->items) {
        data[item.key] = item.value;
        out.results.emplace_back();
      }
      response.body = out;
    } else if (auto* del = std::get_if<net::DeleteRequest>(&request.body)) {
      data.erase(del->key);
      response.body = net::DeleteResponse{1};
    } else if (std::holds_alternative<net::StatsRequest>(request.body)) {
      response.body = net::StatsResponse{};
    } else {
      response.body = net::ErrorResponse{Status::Code::kNotSupported, "fake: not supported"};
    }
    if (fail_with) response.body = net::ErrorResponse{fail_with->code(), fail_with->message()};
    done(std::move(response));
  }

  std::map<std::string, std::string> data;
  int calls = 0;
  int multi_gets = 0;
  int multi_puts = 0;
  std::vector<net::Consistency> consistencies;
  std::optional<Status> fail_with;
};

class FakeView : public ClusterView {
 public:
  std::shared_ptr<const ClusterMap> Map() const override { return nullptr; }
  void Fetch(std::function<void(std::vector<NodeView>)> done) override { done({}); }
};

}  // namespace shardkv::redis::testing
