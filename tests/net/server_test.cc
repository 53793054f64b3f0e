#include "net/server.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>

#include "net/test_handlers.h"
#include "net/test_socket.h"

namespace shardkv::net {
namespace {

using testing::DeferredHandler;
using testing::EchoHandler;
using testing::Frame;
using testing::PollUntil;
using testing::RawSocket;

std::unique_ptr<Server> StartServer(RequestHandler* handler, ServerOptions options = {}) {
  options.host = "127.0.0.1";
  options.port = 0;
  auto server = std::make_unique<Server>(options, handler);
  REQUIRE(server->Start().ok());
  REQUIRE(server->bound_port() != 0);
  return server;
}

Request Get(uint64_t id, std::string key) {
  Request r;
  r.id = id;
  r.body = GetRequest{id, std::move(key)};
  return r;
}

// A well-behaved client still gets answers: the check after every bad-input test.
void ExpectServes(uint16_t port) {
  RawSocket good(port);
  REQUIRE(good.ok());
  REQUIRE(good.SendAll(Frame(Get(77, "still-alive"))));
  auto r = good.ReadResponse();
  REQUIRE(r);
  CHECK(r->id == 77);
  CHECK(std::get<GetResponse>(r->body).value == "still-alive");
}

// The connection answers one error Response (id 0) and then closes.
void ExpectErrorThenClose(RawSocket& s, Status::Code code) {
  auto r = s.ReadResponse();
  REQUIRE(r);
  CHECK(r->id == 0);
  CHECK(r->status().code() == code);
  CHECK(s.WaitForClose());
}

}  // namespace

TEST_CASE("server: binds port 0 and answers a request", "[net][server]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  ExpectServes(server->bound_port());
  CHECK(PollUntil([&] { return server->stats().open_connections == 0; }));
  CHECK(server->stats().frames_in == 1);
  CHECK(server->stats().frames_out == 1);
}

TEST_CASE("server: start fails with a clear error on a bad address", "[net][server]") {
  EchoHandler handler;
  ServerOptions o;
  o.host = "256.1.1.1";
  Server server(o, &handler);
  Status st = server.Start();
  CHECK(st.code() == Status::Code::kIOError);
  CHECK(st.message().find("256.1.1.1") != std::string::npos);
}

TEST_CASE("server: pipelined requests are answered out of order by id", "[net][server]") {
  DeferredHandler handler;
  auto server = StartServer(&handler);
  RawSocket s(server->bound_port());
  REQUIRE(s.ok());
  REQUIRE(s.SendAll(Frame(Get(1, "a")) + Frame(Get(2, "b")) + Frame(Get(3, "c"))));
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 3; }));
  auto held = handler.TakeAll();
  // Answer from another thread, newest first.
  std::thread answer([&] {
    for (int i = 2; i >= 0; --i) held[i].done(EchoHandler::Answer(held[i].request));
  });
  answer.join();
  for (uint64_t want : {3, 2, 1}) {
    auto r = s.ReadResponse();
    REQUIRE(r);
    CHECK(r->id == want);
    CHECK(std::get<GetResponse>(r->body).value == std::string(1, char('a' + want - 1)));
  }
}

TEST_CASE("server: many pipelined requests in one write", "[net][server]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  RawSocket s(server->bound_port());
  std::string batch;
  for (uint64_t i = 1; i <= 2000; ++i) batch += Frame(Get(i, "k" + std::to_string(i)));
  REQUIRE(s.SendAll(batch));
  for (uint64_t i = 1; i <= 2000; ++i) {
    auto r = s.ReadResponse();
    REQUIRE(r);
    REQUIRE(r->id == i);  // a synchronous handler answers in order
  }
}

TEST_CASE("server: garbage bytes get an error and a close, others keep working",
          "[net][server][bad-input]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  RawSocket good(server->bound_port());
  REQUIRE(good.SendAll(Frame(Get(5, "before"))));
  REQUIRE(good.ReadResponse());

  RawSocket bad(server->bound_port());
  REQUIRE(bad.SendAll("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  ExpectErrorThenClose(bad, Status::Code::kInvalidArgument);

  REQUIRE(good.SendAll(Frame(Get(6, "after"))));
  auto r = good.ReadResponse();
  REQUIRE(r);
  CHECK(r->id == 6);
  ExpectServes(server->bound_port());
  CHECK(server->stats().bad_frames == 1);
}

TEST_CASE("server: a truncated frame then EOF gets an error and a close",
          "[net][server][bad-input]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  RawSocket bad(server->bound_port());
  const std::string frame = Frame(Get(1, "truncated"));
  REQUIRE(bad.SendAll(std::string_view(frame).substr(0, frame.size() - 5)));
  bad.ShutdownWrite();
  ExpectErrorThenClose(bad, Status::Code::kInvalidArgument);
  ExpectServes(server->bound_port());
  CHECK(server->stats().bad_frames == 1);
}

TEST_CASE("server: an oversized length prefix gets an error and a close",
          "[net][server][bad-input]") {
  EchoHandler handler;
  ServerOptions o;
  o.codec.max_frame_bytes = 4096;
  auto server = StartServer(&handler, o);
  RawSocket bad(server->bound_port());
  REQUIRE(bad.SendAll(std::string("\x08\x20\x00\x00", 4)));  // 8200 bytes > 4096
  ExpectErrorThenClose(bad, Status::Code::kInvalidArgument);
  ExpectServes(server->bound_port());
}

TEST_CASE("server: a frame that is not a message gets an error and a close",
          "[net][server][bad-input]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  RawSocket bad(server->bound_port());
  // A valid length (64) but a segment table announcing 2^32 segments.
  REQUIRE(bad.SendAll(std::string("\x40\x00\x00\x00", 4) + std::string(64, '\xff')));
  ExpectErrorThenClose(bad, Status::Code::kCorruption);
  ExpectServes(server->bound_port());
  CHECK(server->stats().bad_frames == 1);
}

TEST_CASE("server: an unknown op fails alone and the connection stays open", "[net][server]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  std::string frame = Frame(Get(9, "x"));
  // Patch the body union tag (data byte 34 of the root struct) to an op nobody knows.
  frame[4 + 8 + 8 + 34] = static_cast<char>(200);
  RawSocket s(server->bound_port());
  REQUIRE(s.SendAll(frame + Frame(Get(10, "next"))));
  auto r1 = s.ReadResponse();
  REQUIRE(r1);
  CHECK(r1->id == 9);
  CHECK(r1->status().code() == Status::Code::kNotSupported);
  auto r2 = s.ReadResponse();
  REQUIRE(r2);
  CHECK(r2->id == 10);
  CHECK(r2->ok());
}

TEST_CASE("server: a handler that drops `done` yields an Internal error", "[net][server]") {
  struct Dropper : RequestHandler {
    void Handle(Request, std::function<void(Response)>) override {}
  } handler;
  auto server = StartServer(&handler);
  RawSocket s(server->bound_port());
  REQUIRE(s.SendAll(Frame(Get(3, "x"))));
  auto r = s.ReadResponse();
  REQUIRE(r);
  CHECK(r->id == 3);
  CHECK(r->status().code() == Status::Code::kInternal);
  CHECK(PollUntil([&] { return server->stats().in_flight == 0; }));
}

TEST_CASE("server: a half-closed client still gets its answers", "[net][server]") {
  DeferredHandler handler;
  auto server = StartServer(&handler);
  RawSocket s(server->bound_port());
  REQUIRE(s.SendAll(Frame(Get(1, "a")) + Frame(Get(2, "b"))));
  s.ShutdownWrite();
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 2; }));
  for (auto& h : handler.TakeAll()) h.done(EchoHandler::Answer(h.request));
  REQUIRE(s.ReadResponse());
  REQUIRE(s.ReadResponse());
  CHECK(s.WaitForClose());
}

TEST_CASE("server: idle and mid-frame read timeouts close the connection", "[net][server]") {
  EchoHandler handler;
  ServerOptions o;
  o.idle_timeout = std::chrono::milliseconds(100);
  o.read_timeout = std::chrono::milliseconds(100);
  auto server = StartServer(&handler, o);
  {
    RawSocket idle(server->bound_port());
    REQUIRE(idle.SendAll(Frame(Get(1, "x"))));
    REQUIRE(idle.ReadResponse());
    CHECK(idle.WaitForClose());
  }
  {
    RawSocket stalled(server->bound_port());
    REQUIRE(stalled.SendAll(std::string("\x40\x00\x00\x00", 4) + "abc"));
    CHECK(stalled.WaitForClose());
  }
  CHECK(PollUntil([&] { return server->stats().open_connections == 0; }));
}

TEST_CASE("server: connections over the limit are refused with an error", "[net][server]") {
  EchoHandler handler;
  ServerOptions o;
  o.max_connections = 1;
  auto server = StartServer(&handler, o);
  RawSocket first(server->bound_port());
  REQUIRE(first.SendAll(Frame(Get(1, "x"))));
  REQUIRE(first.ReadResponse());
  RawSocket second(server->bound_port());
  REQUIRE(second.ok());
  ExpectErrorThenClose(second, Status::Code::kResourceExhausted);
  CHECK(server->stats().rejected_connections == 1);
  REQUIRE(first.SendAll(Frame(Get(2, "y"))));
  CHECK(first.ReadResponse());
}

TEST_CASE("server: graceful Stop waits for in-flight requests and flushes them",
          "[net][server][stop]") {
  DeferredHandler handler;
  auto server = StartServer(&handler);
  const uint16_t port = server->bound_port();
  RawSocket s(port);
  REQUIRE(s.SendAll(Frame(Get(1, "a")) + Frame(Get(2, "b")) + Frame(Get(3, "c"))));
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 3; }));

  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    server->Stop();
    stopped = true;
  });
  // Stop() closes the listener first; then it waits for the three requests.
  REQUIRE(PollUntil([&] { return !RawSocket(port).ok(); }));
  CHECK_FALSE(stopped.load());
  for (auto& h : handler.TakeAll()) h.done(EchoHandler::Answer(h.request));
  stopper.join();
  CHECK(stopped.load());
  for (int i = 0; i < 3; ++i) CHECK(s.ReadResponse());
  CHECK(s.WaitForClose());
  CHECK(server->stats().in_flight == 0);
  server->Stop();  // idempotent
}

TEST_CASE("server: Stop gives up on a stuck handler after the grace period",
          "[net][server][stop]") {
  DeferredHandler handler;  // declared first: outlives the server, as required
  ServerOptions o;
  o.stop_grace = std::chrono::milliseconds(200);
  auto server = StartServer(&handler, o);
  RawSocket s(server->bound_port());
  REQUIRE(s.SendAll(Frame(Get(1, "a"))));
  REQUIRE(PollUntil([&] { return handler.HeldCount() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  server->Stop();
  CHECK(std::chrono::steady_clock::now() - start < testing::kWait);
  CHECK(s.WaitForClose());
  // Answering after the stop (and after destroying the server) is safe: the answer is dropped.
  auto held = handler.TakeAll();
  server.reset();
  held[0].done(EchoHandler::Answer(held[0].request));
}

TEST_CASE("server: Stop from two threads at once", "[net][server][stop]") {
  EchoHandler handler;
  auto server = StartServer(&handler);
  ExpectServes(server->bound_port());
  std::thread a([&] { server->Stop(); });
  std::thread b([&] { server->Stop(); });
  a.join();
  b.join();
  CHECK(server->stats().open_connections == 0);
}

}  // namespace shardkv::net
