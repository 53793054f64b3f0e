#include "net/rpc_client.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/server.h"
#include "net/test_handlers.h"
#include "net/test_socket.h"

namespace shardkv::net {
namespace {

using namespace std::chrono_literals;
using testing::DeferredHandler;
using testing::EchoHandler;
using testing::PollUntil;

std::unique_ptr<Server> StartRpcServer(RequestHandler* handler, ServerOptions options = {}) {
  options.host = "127.0.0.1";
  options.port = 0;
  auto server = std::make_unique<Server>(options, handler);
  REQUIRE(server->Start().ok());
  return server;
}

std::string Address(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

Request Get(std::string key, uint64_t token = 0) {
  Request r;
  r.body = GetRequest{token, std::move(key)};
  return r;
}

}  // namespace

TEST_CASE("rpc: parse host:port", "[net][rpc]") {
  std::string host;
  uint16_t port = 0;
  REQUIRE(ParseHostPort("127.0.0.1:7001", &host, &port).ok());
  CHECK(host == "127.0.0.1");
  CHECK(port == 7001);
  REQUIRE(ParseHostPort("[::1]:80", &host, &port).ok());
  CHECK(host == "::1");
  REQUIRE(ParseHostPort("localhost:65535", &host, &port).ok());
  for (const char* bad : {"", "host", ":80", "host:", "host:0", "host:65536", "host:8x", "::1:80",
                          "[::1]80", "[::1]"}) {
    INFO(bad);
    CHECK(ParseHostPort(bad, &host, &port).code() == Status::Code::kInvalidArgument);
  }
}

TEST_CASE("rpc: CallSync round trip, ids assigned by the client", "[net][rpc]") {
  EchoHandler handler;
  auto server = StartRpcServer(&handler);
  RpcClient client(Address(server->bound_port()));
  for (int i = 0; i < 10; ++i) {
    Request r = Get("key" + std::to_string(i), i);
    r.id = 12345;  // overwritten
    auto resp = client.CallSync(r, 5s);
    REQUIRE(resp.ok());
    REQUIRE(resp->ok());
    CHECK(std::get<GetResponse>(resp->body).value == "key" + std::to_string(i));
    CHECK(resp->id != 12345);
  }
  CHECK(client.stats().connects == 1);
  CHECK(client.stats().in_flight == 0);
}

TEST_CASE("rpc: many threads, many pipelined calls, pooled connections", "[net][rpc]") {
  EchoHandler handler;
  ServerOptions so;
  so.io_threads = 2;
  auto server = StartRpcServer(&handler, so);
  RpcClientOptions co;
  co.connections = 3;
  auto io = std::make_shared<IoContext>(2);
  RpcClient client(Address(server->bound_port()), co, io);

  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 500;
  std::atomic<int> ok{0}, wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCallsPerThread; ++i) {
        std::string key = std::to_string(t) + ":" + std::to_string(i);
        client.Call(Get(key), 10s, [&, key](StatusOr<Response> r) {
          if (r.ok() && r->ok() && std::get<GetResponse>(r->body).value == key) {
            ok++;
          } else {
            wrong++;
          }
          done++;
        });
      }
    });
  }
  for (auto& t : threads) t.join();
  REQUIRE(PollUntil([&] { return done.load() == kThreads * kCallsPerThread; }));
  CHECK(ok.load() == kThreads * kCallsPerThread);
  CHECK(wrong.load() == 0);
  CHECK(client.stats().connects == 3);
  CHECK(server->stats().frames_in == kThreads * kCallsPerThread);
}

TEST_CASE("rpc: responses out of order are matched by id", "[net][rpc]") {
  DeferredHandler handler;
  auto server = StartRpcServer(&handler);
  RpcClient client(Address(server->bound_port()));
  std::vector<std::future<StatusOr<Response>>> results;
  for (int i = 0; i < 5; ++i) {
    auto p = std::make_shared<std::promise<StatusOr<Response>>>();
    results.push_back(p->get_future());
    client.Call(Get("k" + std::to_string(i)), 10s,
                [p](StatusOr<Response> r) { p->set_value(std::move(r)); });
  }
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 5; }));
  auto held = handler.TakeAll();
  for (auto it = held.rbegin(); it != held.rend(); ++it) {
    it->done(EchoHandler::Answer(it->request));
  }
  for (int i = 0; i < 5; ++i) {
    auto r = results[i].get();
    REQUIRE(r.ok());
    CHECK(std::get<GetResponse>(r->body).value == "k" + std::to_string(i));
  }
}

TEST_CASE("rpc: a call the server never answers times out", "[net][rpc]") {
  DeferredHandler handler(/*answer_pings=*/true);
  auto server = StartRpcServer(&handler);
  const std::string address = Address(server->bound_port());
  RpcClient client(address);
  auto r = client.CallSync(Get("slow"), 100ms);
  CHECK(r.status().code() == Status::Code::kTimeout);
  CHECK(r.status().message().find(address) == 0);
  CHECK(r.status().message().find("100 ms") != std::string::npos);
  CHECK(client.stats().timeouts == 1);
  // A late answer is ignored, and the connection keeps working.
  REQUIRE(handler.HeldCount() == 1);
  for (auto& h : handler.TakeAll()) h.done(EchoHandler::Answer(h.request));
  auto fast = std::async(std::launch::async, [&] { return client.CallSync(Get("fast"), 5s); });
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 1; }));
  for (auto& h : handler.TakeAll()) h.done(EchoHandler::Answer(h.request));
  auto ok = fast.get();
  REQUIRE(ok.ok());
  CHECK(std::get<GetResponse>(ok->body).value == "fast");
  // The node answered the liveness probe, so the connection was kept.
  CHECK(handler.pings.load() == 1);
  CHECK(client.stats().probes == 1);
  CHECK(client.stats().resets == 0);
  CHECK(client.stats().connects == 1);
}

TEST_CASE("rpc: a connection that answers nothing, not even the probe, is reset", "[net][rpc]") {
  // A peer that accepted and then went silent (a partition, SIGSTOP): without the reset, every
  // later call would queue on the dead connection while TCP retransmits into it.
  testing::RawListener silent;
  RpcClientOptions o;
  o.probe_timeout = 100ms;
  RpcClient client(Address(silent.port()), o);
  std::promise<Status> first, pending;
  client.Call(Get("first"), 100ms, [&](StatusOr<Response> r) { first.set_value(r.status()); });
  const int fd1 = silent.Accept();
  REQUIRE(fd1 >= 0);
  client.Call(Get("pending"), 30s, [&](StatusOr<Response> r) { pending.set_value(r.status()); });
  CHECK(first.get_future().get().code() == Status::Code::kTimeout);
  // The probe goes unanswered: the connection is reset, and the call still waiting on it fails
  // at once as Unavailable (retryable), naming why, instead of after 30 s.
  auto f = pending.get_future();
  REQUIRE(f.wait_for(10s) == std::future_status::ready);
  const Status st = f.get();
  CHECK(st.code() == Status::Code::kUnavailable);
  CHECK(st.message().find("no reply for 100 ms after a call timed out") != std::string::npos);
  CHECK(client.stats().probes == 1);
  CHECK(client.stats().resets == 1);
  // The next call dials a new connection.
  std::promise<Status> next;
  client.Call(Get("next"), 100ms, [&](StatusOr<Response> r) { next.set_value(r.status()); });
  const int fd2 = silent.Accept();
  CHECK(fd2 >= 0);
  CHECK(next.get_future().get().code() == Status::Code::kTimeout);
  ::close(fd1);
  if (fd2 >= 0) ::close(fd2);
}

TEST_CASE("rpc: short and long deadlines mixed on one connection", "[net][rpc]") {
  DeferredHandler handler(/*answer_pings=*/true);
  auto server = StartRpcServer(&handler);
  RpcClient client(Address(server->bound_port()));
  std::promise<Status> long_done, short_done;
  client.Call(Get("long"), 10s, [&](StatusOr<Response> r) { long_done.set_value(r.status()); });
  client.Call(Get("short"), 50ms, [&](StatusOr<Response> r) { short_done.set_value(r.status()); });
  CHECK(short_done.get_future().get().code() == Status::Code::kTimeout);
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 2; }));
  for (auto& h : handler.TakeAll()) h.done(EchoHandler::Answer(h.request));
  CHECK(long_done.get_future().get().ok());
}

TEST_CASE("rpc: connection refused names the address", "[net][rpc]") {
  testing::RawListener closed(/*listen=*/false);  // bound, not listening: connects are refused
  const std::string address = Address(closed.port());
  RpcClient client(address);
  auto r = client.CallSync(Get("x"), 5s);
  CHECK(r.status().code() == Status::Code::kUnavailable);
  CHECK(r.status().message() == address + ": connection refused");
  CHECK(client.stats().connect_failures == 1);
  // Lazily retried on the next call.
  auto again = client.CallSync(Get("x"), 5s);
  CHECK(again.status().code() == Status::Code::kUnavailable);
  CHECK(client.stats().connect_failures == 2);
}

TEST_CASE("rpc: a bad address fails every call", "[net][rpc]") {
  RpcClient client("no-port-here");
  auto r = client.CallSync(Get("x"), 1s);
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("rpc: reconnects after the server closed the connection", "[net][rpc]") {
  EchoHandler handler;
  ServerOptions o;
  o.idle_timeout = 50ms;
  auto server = StartRpcServer(&handler, o);
  RpcClient client(Address(server->bound_port()));
  REQUIRE(client.CallSync(Get("one"), 5s).ok());
  REQUIRE(PollUntil([&] { return server->stats().open_connections == 0; }));
  // The first call after the close may race the client noticing it; bounded retries.
  bool ok = false;
  for (int attempt = 0; attempt < 5 && !ok; ++attempt) ok = client.CallSync(Get("two"), 5s).ok();
  CHECK(ok);
  CHECK(client.stats().connects >= 2);
}

TEST_CASE("rpc: a server sending garbage fails the calls and drops the connection", "[net][rpc]") {
  testing::RawListener fake;
  const std::string address = Address(fake.port());
  RpcClient client(address);
  auto result = std::async(std::launch::async, [&] { return client.CallSync(Get("x"), 5s); });
  testing::RawSocket conn(fake.Accept());
  REQUIRE(conn.ok());
  auto request = conn.ReadRequest();
  REQUIRE(request);
  CHECK(std::get<GetRequest>(request->body).key == "x");
  REQUIRE(conn.SendAll(std::string("\x10\x00\x00\x00", 4) + std::string(16, '\xee')));
  auto r = result.get();
  CHECK_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kCorruption);
  CHECK(r.status().message().find(address) == 0);
  CHECK(conn.WaitForClose());
}

TEST_CASE("rpc: a Redis or HTTP server at the address is named at its first bytes", "[net][rpc]") {
  struct Case {
    std::string answer;
    std::string named;
  };
  for (const Case& c : {Case{"-ERR unknown command 'H', with args beginning with: \r\n",
                             "a Redis server (a node's Redis port?) answered \"-ERR unknown"},
                        Case{"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n",
                             "an HTTP server (a node's metrics port?) answered \"HTTP/1.1 400"},
                        Case{"SSH-2.0-OpenSSH_9.2\r\n", "a server of another protocol"}}) {
    testing::RawListener fake;
    const std::string address = Address(fake.port());
    RpcClient client(address);
    // A timeout far beyond the test's own waits: the answer must come from the first bytes.
    auto result = std::async(std::launch::async, [&] { return client.CallSync(Get("x"), 60s); });
    testing::RawSocket conn(fake.Accept());
    REQUIRE(conn.ok());
    auto frame = conn.ReadFrame();
    REQUIRE(frame);
    // The request holds a line end, so a line-based server has a whole line to answer.
    CHECK(frame->find("\r\n") != std::string::npos);
    REQUIRE(conn.SendAll(c.answer));
    REQUIRE(result.wait_for(10s) == std::future_status::ready);
    auto r = result.get();
    INFO(r.status().ToString());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kUnavailable);
    CHECK(r.status().message().find(address + " is not a shardkv node: " + c.named) == 0);
  }
}

TEST_CASE("rpc: Close aborts pending calls, later calls fail", "[net][rpc]") {
  DeferredHandler handler;
  auto server = StartRpcServer(&handler);
  RpcClient client(Address(server->bound_port()));
  std::promise<Status> pending;
  client.Call(Get("x"), 10s, [&](StatusOr<Response> r) { pending.set_value(r.status()); });
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 1; }));
  client.Close();
  CHECK(pending.get_future().get().code() == Status::Code::kAborted);
  CHECK(client.CallSync(Get("y"), 1s).status().code() == Status::Code::kAborted);
  client.Close();                                                            // idempotent
  for (auto& h : handler.TakeAll()) h.done(EchoHandler::Answer(h.request));  // quick Stop()
}

TEST_CASE("rpc: CallSync from a callback is refused instead of deadlocking", "[net][rpc]") {
  EchoHandler handler;
  auto server = StartRpcServer(&handler);
  RpcClient client(Address(server->bound_port()));
  std::promise<Status> inner;
  client.Call(Get("outer"), 5s, [&](StatusOr<Response>) {
    inner.set_value(client.CallSync(Get("inner"), 1s).status());
  });
  CHECK(inner.get_future().get().code() == Status::Code::kFailedPrecondition);
}

TEST_CASE("rpc: server errors arrive as responses, with the newer map", "[net][rpc]") {
  struct Stale : RequestHandler {
    void Handle(Request request, std::function<void(Response)> done) override {
      Response r = MakeErrorResponse(0, Status::StaleEpoch("epoch 3 < 5"));
      r.epoch = 5;
      r.cluster_map = "map-v5";
      done(std::move(r));
    }
  } handler;
  auto server = StartRpcServer(&handler);
  RpcClient client(Address(server->bound_port()));
  auto r = client.CallSync(Get("x"), 5s);
  REQUIRE(r.ok());
  CHECK(r->status().code() == Status::Code::kStaleEpoch);
  CHECK(r->cluster_map == "map-v5");
  CHECK(r->epoch == 5);
}

}  // namespace shardkv::net
