// TLS between Server and RpcClient (net/tls_context.h, net/transport.h): mutual certificates
// from one CA let calls through; a certificate from another CA, an expired one, one for another
// host, a plain client and a silent one are all refused while a TLS client next to them keeps
// working; TLS carries the secret handshake too. Certificates are made at test time (TestPki).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "net/rpc_client.h"
#include "net/server.h"
#include "net/test_handlers.h"
#include "net/test_socket.h"
#include "net/tls_context.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

namespace shardkv::net {
namespace {

using testing::EchoHandler;
using testing::Frame;
using testing::RawSocket;

constexpr auto kTlsCallTimeout = std::chrono::milliseconds(3000);

std::shared_ptr<const TlsContext> MustLoad(const std::string& ca,
                                           const shardkv::testing::TestCert& c) {
  auto ctx = TlsContext::Load(TlsFiles{ca, c.cert_file, c.key_file});
  INFO(ctx.status().ToString());
  REQUIRE(ctx.ok());
  return *ctx;
}

// A CA, the node's and a client's certificate from it, and an unrelated CA.
struct Pki {
  shardkv::testing::TempDir dir;
  shardkv::testing::TestPki ca{dir.path(), "good"};
  shardkv::testing::TestPki other{dir.path(), "other"};
  shardkv::testing::TestCert node = ca.Issue("node", {"IP:127.0.0.1", "DNS:localhost"});
  shardkv::testing::TestCert client = ca.Issue("client", {});
  std::shared_ptr<const TlsContext> node_ctx = MustLoad(ca.ca_file(), node);
  std::shared_ptr<const TlsContext> client_ctx = MustLoad(ca.ca_file(), client);
};

std::unique_ptr<Server> StartTlsServer(
    RequestHandler* handler, std::shared_ptr<const TlsContext> tls, std::string secret = "",
    std::chrono::milliseconds handshake_timeout = std::chrono::seconds(5)) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.tls = std::move(tls);
  options.auth_secret = std::move(secret);
  options.handshake_timeout = handshake_timeout;
  auto server = std::make_unique<Server>(options, handler);
  REQUIRE(server->Start().ok());
  return server;
}

std::unique_ptr<RpcClient> ClientFor(const std::string& address,
                                     std::shared_ptr<const TlsContext> tls, std::string secret = "",
                                     int connections = 1) {
  RpcClientOptions o;
  o.tls = std::move(tls);
  o.auth_secret = std::move(secret);
  o.connections = connections;
  o.connect_timeout = std::chrono::milliseconds(2000);
  return std::make_unique<RpcClient>(address, o);
}

std::string TlsAddressOf(const Server& s, const std::string& host = "127.0.0.1") {
  return host + ":" + std::to_string(s.bound_port());
}

Request TlsBody(RequestBody body) {
  Request r;
  r.body = std::move(body);
  return r;
}

// True while `client` can do a put and a get whose answer checks out.
bool RoundTrip(RpcClient& client, uint64_t i) {
  auto put = client.CallSync(TlsBody(PutRequest{i, "k" + std::to_string(i), "v"}), kTlsCallTimeout);
  auto get = client.CallSync(TlsBody(GetRequest{i, "k" + std::to_string(i)}), kTlsCallTimeout);
  return put.ok() && put->ok() && get.ok() && get->ok() &&
         std::get<GetResponse>(get->body).value == "k" + std::to_string(i);
}

// Polls until the wall clock has passed `t` (bounded: the certificates at hand expire within
// seconds). Not a sleep standing in for synchronisation: the condition is the clock itself.
void WaitUntilWallClockPasses(std::time_t t) {
  REQUIRE(testing::PollUntil([&] { return std::time(nullptr) > t; }, std::chrono::seconds(10)));
}

void ExpectRefused(const StatusOr<Response>& r, const std::string& says) {
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  CHECK(r.status().code() == Status::Code::kUnauthenticated);
  CHECK_THAT(r.status().message(), Catch::Contains("TLS handshake failed"));
  CHECK_THAT(r.status().message(), Catch::Contains(says));
}

}  // namespace

TEST_CASE("tls: certificates from the node's CA get in, pipelined over several connections",
          "[net][tls]") {
  Pki pki;
  EchoHandler handler;
  auto server = StartTlsServer(&handler, pki.node_ctx);
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto client = ClientFor(TlsAddressOf(*server, host), pki.client_ctx, "", 3);
    std::atomic<int> ok{0}, failed{0};
    constexpr int kCalls = 300;
    for (int i = 0; i < kCalls; ++i) {
      client->Call(TlsBody(GetRequest{static_cast<uint64_t>(i), "key" + std::to_string(i)}),
                   kTlsCallTimeout, [&, i](StatusOr<Response> r) {
                     const bool good =
                         r.ok() && r->ok() &&
                         std::get<GetResponse>(r->body).value == "key" + std::to_string(i);
                     (good ? ok : failed).fetch_add(1);
                   });
    }
    REQUIRE(testing::PollUntil([&] { return ok.load() + failed.load() == kCalls; }));
    CHECK(ok.load() == kCalls);
    CHECK(client->stats().connects == 3);
  }
  CHECK(server->stats().tls_failures == 0);
}

TEST_CASE("tls: loading refuses files that cannot work, naming the file", "[net][tls]") {
  Pki pki;
  const std::string ca = pki.ca.ca_file();
  auto error_of = [](TlsFiles f) {
    auto ctx = TlsContext::Load(f);
    REQUIRE_FALSE(ctx.ok());
    CHECK(ctx.status().code() == Status::Code::kInvalidArgument);
    return ctx.status().message();
  };
  CHECK_THAT(error_of({ca, pki.node.cert_file, ""}), Catch::Contains("needs all three"));
  CHECK_THAT(error_of({ca, pki.dir.Sub("missing.pem"), pki.node.key_file}),
             Catch::Contains("missing.pem: cannot read"));
  CHECK_THAT(error_of({pki.node.key_file, pki.node.cert_file, pki.node.key_file}),
             Catch::Contains("not a PEM CA certificate"));
  CHECK_THAT(error_of({ca, pki.node.cert_file, pki.client.key_file}),
             Catch::Contains("is not the key of the certificate"));
  auto foreign = pki.other.Issue("foreign", {"IP:127.0.0.1"});
  CHECK_THAT(error_of({ca, foreign.cert_file, foreign.key_file}),
             Catch::Contains("does not verify against the CA"));
  auto expired = pki.ca.Issue("expired", {"IP:127.0.0.1"}, -7200, -3600);
  CHECK_THAT(error_of({ca, expired.cert_file, expired.key_file}), Catch::Contains("expired on"));
  auto future = pki.ca.Issue("future", {"IP:127.0.0.1"}, 3600, 7200);
  CHECK_THAT(error_of({ca, future.cert_file, future.key_file}),
             Catch::Contains("is not valid before"));
}

TEST_CASE("tls: bad peers are refused while a TLS client keeps working", "[net][tls]") {
  Pki pki;
  EchoHandler handler;
  auto server = StartTlsServer(&handler, pki.node_ctx, "", std::chrono::milliseconds(500));
  const std::string address = TlsAddressOf(*server);
  auto good = ClientFor(address, pki.client_ctx);
  REQUIRE(RoundTrip(*good, 1));

  SECTION("a client certificate from another CA") {
    // Its own CA file trusts the node (so the refusal is the node's), its certificate does not.
    auto foreign = pki.other.Issue("foreign-client", {});
    auto ctx = TlsContext::Load(TlsFiles{pki.ca.ca_file(), foreign.cert_file, foreign.key_file});
    // Load itself refuses a certificate that does not chain to the CA it is given...
    REQUIRE_FALSE(ctx.ok());
    // ...so present it with the other CA as its trust, which cannot verify the node either: the
    // node refuses it first or the client refuses the node; both are TLS refusals.
    auto bad = ClientFor(address, MustLoad(pki.other.ca_file(), foreign));
    ExpectRefused(bad->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout), "");
    REQUIRE(testing::PollUntil([&] { return server->stats().tls_failures >= 1; }));
  }
  SECTION("a client certificate that has expired") {
    const std::time_t now = std::time(nullptr);
    auto soon = pki.ca.Issue("short-lived", {}, -3600, 2);
    auto ctx = MustLoad(pki.ca.ca_file(), soon);  // valid when loaded
    WaitUntilWallClockPasses(now + 3);
    auto bad = ClientFor(address, ctx);
    // TLS 1.3: the node's refusal (an alert) arrives after the client finished its handshake.
    ExpectRefused(bad->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout), "certificate expired");
    REQUIRE(testing::PollUntil([&] { return server->stats().tls_failures >= 1; }));
  }
  SECTION("a plain client") {
    auto plain = ClientFor(address, nullptr);
    auto r = plain->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout);
    CHECK_FALSE(r.ok());
    RawSocket s(server->bound_port());
    REQUIRE(s.ok());
    REQUIRE(s.SendAll(Frame(TlsBody(PingRequest{}))));
    CHECK_FALSE(s.ReadResponse(std::chrono::milliseconds(2000)));
    CHECK(s.WaitForClose());
    REQUIRE(testing::PollUntil([&] { return server->stats().tls_failures >= 2; }));
  }
  SECTION("a client that never starts the TLS handshake") {
    RawSocket s(server->bound_port());
    REQUIRE(s.ok());
    CHECK(s.WaitForClose());  // after handshake_timeout (500 ms)
    REQUIRE(testing::PollUntil([&] { return server->stats().tls_failures >= 1; }));
  }
  CHECK(RoundTrip(*good, 2));
  CHECK(good->stats().connects == 1);  // the good connection was never disturbed
}

TEST_CASE("tls: the client refuses a node whose certificate it cannot trust", "[net][tls]") {
  Pki pki;
  EchoHandler handler;

  SECTION("a node certificate from another CA") {
    auto foreign = pki.other.Issue("foreign-node", {"IP:127.0.0.1"});
    auto server = StartTlsServer(&handler, MustLoad(pki.other.ca_file(), foreign));
    auto client = ClientFor(TlsAddressOf(*server), pki.client_ctx);
    // OpenSSL names the chain it was sent ("self-signed certificate in certificate chain", or
    // "unable to get local issuer certificate" without the CA in it).
    ExpectRefused(client->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout),
                  "the peer's certificate: ");
  }
  SECTION("a node certificate that has expired") {
    const std::time_t now = std::time(nullptr);
    auto soon = pki.ca.Issue("short-lived-node", {"IP:127.0.0.1"}, -3600, 2);
    auto server = StartTlsServer(&handler, MustLoad(pki.ca.ca_file(), soon));
    WaitUntilWallClockPasses(now + 3);
    auto client = ClientFor(TlsAddressOf(*server), pki.client_ctx);
    ExpectRefused(client->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout),
                  "certificate has expired");
  }
  SECTION("a node certificate for another host") {
    auto elsewhere = pki.ca.Issue("elsewhere", {"IP:127.0.0.2", "DNS:node2.test"});
    auto server = StartTlsServer(&handler, MustLoad(pki.ca.ca_file(), elsewhere));
    auto client = ClientFor(TlsAddressOf(*server), pki.client_ctx);
    ExpectRefused(client->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout),
                  "does not name 127.0.0.1");
    auto by_name = ClientFor(TlsAddressOf(*server, "localhost"), pki.client_ctx);
    ExpectRefused(by_name->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout),
                  "does not name localhost");
  }
  SECTION("a node without TLS") {
    auto server = StartTlsServer(&handler, nullptr);
    auto client = ClientFor(TlsAddressOf(*server), pki.client_ctx);
    auto r = client->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("TLS"));
  }
  CHECK(handler.handled.load() == 0);
}

TEST_CASE("tls: the secret handshake runs inside TLS", "[net][tls][auth]") {
  Pki pki;
  EchoHandler handler;
  const std::string secret = "cluster-secret-0123456789";
  auto server = StartTlsServer(&handler, pki.node_ctx, secret);
  auto good = ClientFor(TlsAddressOf(*server), pki.client_ctx, secret);
  CHECK(RoundTrip(*good, 1));
  auto wrong = ClientFor(TlsAddressOf(*server), pki.client_ctx, "not-the-cluster-secret!");
  auto r = wrong->CallSync(TlsBody(PingRequest{}), kTlsCallTimeout);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kUnauthenticated);
  CHECK_THAT(r.status().message(), Catch::Contains("matches none of this node's secrets"));
  CHECK(server->stats().auth_failures == 1);
  CHECK(server->stats().tls_failures == 0);
  CHECK(RoundTrip(*good, 2));
}

}  // namespace shardkv::net
