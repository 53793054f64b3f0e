// Request handlers for net_tests.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "net/server.h"

namespace shardkv::net::testing {

// Answers synchronously: ping -> ping, get -> found with value = key, put -> ts = token,
// delete -> ts = token, multiGet -> one found item per key, stats -> a counter.
class EchoHandler : public RequestHandler {
 public:
  void Handle(Request request, std::function<void(Response)> done) override {
    handled.fetch_add(1);
    done(Answer(request));
  }

  static Response Answer(const Request& request) {
    Response r;
    r.epoch = request.epoch;
    if (const auto* g = std::get_if<GetRequest>(&request.body)) {
      r.body = GetResponse{true, g->key, g->token};
    } else if (const auto* p = std::get_if<PutRequest>(&request.body)) {
      r.body = PutResponse{p->token};
    } else if (const auto* d = std::get_if<DeleteRequest>(&request.body)) {
      r.body = DeleteResponse{d->token};
    } else if (const auto* m = std::get_if<MultiGetRequest>(&request.body)) {
      MultiGetResponse out;
      for (const auto& k : m->keys) out.results.push_back({Status::OK(), true, k.key, k.token});
      r.body = std::move(out);
    } else if (std::holds_alternative<StatsRequest>(request.body)) {
      StatsResponse s;
      s.counters["requests"] = 1;
      r.body = std::move(s);
    } else {
      r.body = PingResponse{};
    }
    return r;
  }

  std::atomic<int> handled{0};
};

// Keeps every request until the test answers it (or never does).
class DeferredHandler : public RequestHandler {
 public:
  struct Held {
    Request request;
    std::function<void(Response)> done;
  };

  // answer_pings: a server that is alive but slow (it answers the liveness probe an RpcClient
  // sends after a timeout, as a node does); false: one that answers nothing at all.
  explicit DeferredHandler(bool answer_pings = false) : answer_pings_(answer_pings) {}

  void Handle(Request request, std::function<void(Response)> done) override {
    if (answer_pings_ && std::holds_alternative<PingRequest>(request.body)) {
      pings.fetch_add(1);
      done(EchoHandler::Answer(request));
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back({std::move(request), std::move(done)});
  }

  std::atomic<int> pings{0};

  size_t HeldCount() {
    std::lock_guard<std::mutex> lock(mu_);
    return held_.size();
  }

  std::vector<Held> TakeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(held_, {});
  }

 private:
  const bool answer_pings_;
  std::mutex mu_;
  std::vector<Held> held_;
};

}  // namespace shardkv::net::testing
