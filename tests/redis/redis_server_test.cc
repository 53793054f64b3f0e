// The Redis listener over real sockets: a malformed stream gets "-ERR Protocol error" and only
// that connection closes; replies before the bad bytes are still written; Stop() closes.
#include "redis/redis_server.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "redis/fake_backend.h"
#include "redis/raw_resp_client.h"

using namespace shardkv;
using namespace shardkv::redis;
using shardkv::redis::testing::RawClient;
using shardkv::redis::testing::Resp;

namespace {

struct Server {
  explicit Server(std::string secret = "") {
    CommandContext context;
    context.ops = &ops;
    context.view = std::make_shared<testing::FakeView>();
    context.auth_secret = std::move(secret);
    RedisServerOptions options;
    options.limits.max_bulk_bytes = 1024;
    server = std::make_unique<RedisServer>(options, std::move(context));
    REQUIRE(server->Start().ok());
  }
  testing::FakeHandler handler;
  testing::HandlerOps ops{&handler};
  std::unique_ptr<RedisServer> server;
};

}  // namespace

TEST_CASE("redis server: a protocol error closes only its connection", "[redis]") {
  Server s;
  RawClient good(s.server->bound_port());
  RawClient bad(s.server->bound_port());
  good.Send("PING\r\n");
  CHECK(good.Read(7) == "+PONG\r\n");
  // A command, then a bad bulk length: the command's reply, the error, then EOF.
  bad.Send("*1\r\n$4\r\nPING\r\n*1\r\n$x\r\n");
  const std::string expected = "+PONG\r\n-ERR Protocol error: invalid bulk length\r\n";
  CHECK(bad.Read(expected.size()) == expected);
  CHECK(bad.Closed());
  good.Send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n");
  CHECK(good.Read(12) == "+OK\r\n$1\r\nv\r\n");
  CHECK(s.server->counters().protocol_errors.load() == 1);
}

TEST_CASE("redis server: a bulk longer than the limit is a protocol error", "[redis]") {
  Server s;
  RawClient c(s.server->bound_port());
  c.Send("*2\r\n$3\r\nGET\r\n$999999\r\n");
  const std::string expected = "-ERR Protocol error: invalid bulk length\r\n";
  CHECK(c.Read(expected.size()) == expected);
  CHECK(c.Closed());
}

TEST_CASE("redis server: AUTH over the wire, then QUIT closes", "[redis]") {
  Server s("sixteen-byte-secret");
  RawClient c(s.server->bound_port());
  c.Send("GET k\r\n");
  const std::string noauth = "-NOAUTH Authentication required.\r\n";
  CHECK(c.Read(noauth.size()) == noauth);
  c.Send("AUTH sixteen-byte-secret\r\nGET k\r\nQUIT\r\nPING\r\n");
  CHECK(c.Read(15) == "+OK\r\n$-1\r\n+OK\r\n");
  CHECK(c.Closed());
}

TEST_CASE("redis server: Stop closes open connections", "[redis]") {
  Server s;
  RawClient c(s.server->bound_port());
  c.Send("PING\r\n");
  CHECK(c.Read(7) == "+PONG\r\n");
  s.server->Stop();
  CHECK(c.Closed());
}

TEST_CASE("redis server: a refused MULTI/EXEC over the wire applies none of its commands",
          "[redis]") {
  Server s;
  RawClient c(s.server->bound_port());
  // A transaction as a pipelining client writes it: one write, read afterwards.
  c.Send(Resp({"MULTI"}) + Resp({"SET", "tx:a", "1"}) + Resp({"SET", "tx:b", "2"}) +
         Resp({"DEL", "tx:c"}) + Resp({"EXEC"}));
  const std::string multi =
      "-ERR MULTI is refused by shardkv: it has no multi-key transactions (the commands up to "
      "EXEC or DISCARD are not run)\r\n";
  const std::string not_run =
      "-EXECABORT MULTI was refused (shardkv has no multi-key transactions): this command is not "
      "run, nor any other until EXEC or DISCARD\r\n";
  const std::string expected = multi + not_run + not_run + not_run +
                               "-EXECABORT Transaction discarded because of previous errors.\r\n";
  CHECK(c.Read(expected.size()) == expected);
  // None of it ran; the connection serves as usual afterwards.
  c.Send(Resp({"MGET", "tx:a", "tx:b"}) + Resp({"PING"}));
  const std::string after = "*2\r\n$-1\r\n$-1\r\n+PONG\r\n";
  CHECK(c.Read(after.size()) == after);
  CHECK(s.handler.data.empty());
}
