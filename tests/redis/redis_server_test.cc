// The Redis listener over real sockets: a malformed stream gets "-ERR Protocol error" and only
// that connection closes; replies before the bad bytes are still written; Stop() closes.
#include "redis/redis_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "redis/fake_backend.h"

using namespace shardkv;
using namespace shardkv::redis;

namespace {

class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { ::close(fd_); }
  void Send(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // Reads until `want` bytes arrived, EOF, or 5 s passed.
  std::string Read(size_t want) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        eof_ = true;
        break;
      }
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }
  // True once the server closed the connection (within 5 s).
  bool Closed() {
    if (eof_) return true;
    Read(SIZE_MAX);
    return eof_;
  }

 private:
  int fd_ = -1;
  bool eof_ = false;
};

struct Server {
  explicit Server(std::string secret = "") {
    CommandContext context;
    context.handler = &handler;
    context.view = std::make_shared<testing::FakeView>();
    context.auth_secret = std::move(secret);
    RedisServerOptions options;
    options.limits.max_bulk_bytes = 1024;
    server = std::make_unique<RedisServer>(options, std::move(context));
    REQUIRE(server->Start().ok());
  }
  testing::FakeHandler handler;
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
