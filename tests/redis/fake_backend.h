// A fake of what the Redis command layer talks to: an in-memory request handler (multiGet,
// multiPut, delete, scan, stats) that counts its calls, the typed client operations the
// commands call, answered by such a handler (HandlerOps), and a cluster view without a cluster.
#pragma once

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/glob.h"
#include "net/operations.h"
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
    } else if (auto* scan = std::get_if<net::ScanRequest>(&request.body)) {
      // As the real scan: the cursor is a token (here FNV-1a of the key), `count` keys a batch
      // from the first token >= cursor, stable while keys are deleted.
      ++scans;
      std::vector<std::pair<uint64_t, std::string>> order;
      for (const auto& [k, v] : data) order.emplace_back(Token(k), k);
      std::sort(order.begin(), order.end());
      auto it = std::lower_bound(order.begin(), order.end(),
                                 std::pair<uint64_t, std::string>{scan->cursor, ""});
      net::ScanResponse out;
      for (uint32_t n = 0; it != order.end() && n < std::max(1u, scan->count); ++it, ++n) {
        if (scan->match.empty() || common::GlobMatch(scan->match, it->second)) {
          out.keys.push_back(it->second);
        }
        out.cursor = it->first + 1;
      }
      if (it == order.end()) out.cursor = 0;
      response.body = out;
    } else if (std::holds_alternative<net::StatsRequest>(request.body)) {
      response.body = net::StatsResponse{};
    } else {
      response.body = net::ErrorResponse{Status::Code::kNotSupported, "fake: not supported"};
    }
    if (fail_with) response.body = net::ErrorResponse::Of(*fail_with);
    done(std::move(response));
  }

  static uint64_t Token(const std::string& key) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
    return h == UINT64_MAX ? h - 1 : h;
  }

  std::map<std::string, std::string> data;
  int calls = 0;
  int multi_gets = 0;
  int multi_puts = 0;
  int scans = 0;
  std::vector<net::Consistency> consistencies;
  std::optional<Status> fail_with;
};

// The typed client operations over a test's request handler: each call becomes the net::Request
// the handler expects, its answer the typed reply (the node's KvService serves both directly).
class HandlerOps : public net::ClientOperations {
 public:
  explicit HandlerOps(net::RequestHandler* handler) : handler_(handler) {}

  void Get(net::OpOptions o, net::GetRequest r, net::OpDone<net::GetResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void Put(net::OpOptions o, net::PutRequest r, net::OpDone<net::PutResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void Delete(net::OpOptions o, net::DeleteRequest r,
              net::OpDone<net::DeleteResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void MultiGet(net::OpOptions o, net::MultiGetRequest r,
                net::OpDone<net::MultiGetResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void MultiPut(net::OpOptions o, net::MultiPutRequest r,
                net::OpDone<net::MultiPutResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void Expire(net::OpOptions o, net::ExpireRequest r, net::OpDone<net::PutResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void Scan(net::OpOptions o, net::ScanRequest r, net::OpDone<net::ScanResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void Incr(net::OpOptions o, net::IncrRequest r, net::OpDone<net::IncrResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void HashWrite(net::OpOptions o, net::HashWriteRequest r,
                 net::OpDone<net::HashWriteResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void HashRead(net::OpOptions o, net::HashReadRequest r,
                net::OpDone<net::HashReadResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void SetWrite(net::OpOptions o, net::SetWriteRequest r,
                net::OpDone<net::SetWriteResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }
  void SetRead(net::OpOptions o, net::SetReadRequest r,
               net::OpDone<net::SetReadResponse> done) override {
    Call(o, std::move(r), std::move(done));
  }

 private:
  template <typename Req, typename Resp>
  void Call(net::OpOptions o, Req r, net::OpDone<Resp> done) {
    net::Request request;
    request.consistency = o.consistency;
    request.body = std::move(r);
    handler_->Handle(std::move(request), [done = std::move(done)](net::Response response) {
      if (!response.ok()) return done(response.status());
      auto* body = std::get_if<Resp>(&response.body);
      if (body == nullptr) return done(Status::Internal("unexpected reply from the node"));
      done(std::move(*body));
    });
  }

  net::RequestHandler* handler_;
};

class FakeView : public ClusterView {
 public:
  std::shared_ptr<const ClusterMap> Map() const override { return nullptr; }
  void Fetch(std::function<void(std::vector<NodeView>)> done) override { done({}); }
};

}  // namespace shardkv::redis::testing
