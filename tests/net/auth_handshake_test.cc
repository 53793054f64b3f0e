// The authentication handshake (net/auth_handshake.h) between Server and RpcClient: who is let
// in, how refusals look on the wire (one error frame, then close), and that refusals never
// disturb an authenticated connection next to them.
#include "net/auth_handshake.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "net/rpc_client.h"
#include "net/server.h"
#include "net/test_handlers.h"
#include "net/test_socket.h"

namespace shardkv::net {
namespace {

using testing::EchoHandler;
using testing::Frame;
using testing::RawListener;
using testing::RawSocket;

const std::string kClusterSecret = "cluster-secret-0123456789";
const std::string kClientSecret = "client-secret-9876543210";
constexpr auto kCallTimeout = std::chrono::milliseconds(3000);

std::unique_ptr<Server> StartServer(
    RequestHandler* handler, std::string secret, std::string client_secret = "",
    std::chrono::milliseconds handshake_timeout = std::chrono::seconds(5)) {
  ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.auth_secret = std::move(secret);
  options.client_secret = std::move(client_secret);
  options.handshake_timeout = handshake_timeout;
  auto server = std::make_unique<Server>(options, handler);
  REQUIRE(server->Start().ok());
  return server;
}

std::string AddressOf(const Server& s) { return "127.0.0.1:" + std::to_string(s.bound_port()); }

std::unique_ptr<RpcClient> ClientWith(const Server& s, std::string secret) {
  RpcClientOptions o;
  o.auth_secret = std::move(secret);
  o.connect_timeout = std::chrono::milliseconds(2000);
  return std::make_unique<RpcClient>(AddressOf(s), o);
}

Request Body(RequestBody body) {
  Request r;
  r.body = std::move(body);
  return r;
}

// An authenticated client doing puts and gets on its own connection the whole time, so that a
// test can show the refusals next to it never disturb it.
class Worker {
 public:
  explicit Worker(const Server& s) : client_(ClientWith(s, kClusterSecret)) {
    thread_ = std::thread([this] {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      for (uint64_t i = 0; !stop_.load() && std::chrono::steady_clock::now() < give_up; ++i) {
        auto put =
            client_->CallSync(Body(PutRequest{i, "k" + std::to_string(i), "v"}), kCallTimeout);
        auto get = client_->CallSync(Body(GetRequest{i, "k" + std::to_string(i)}), kCallTimeout);
        const bool ok = put.ok() && put->ok() && get.ok() && get->ok() &&
                        std::get<GetResponse>(get->body).value == "k" + std::to_string(i);
        (ok ? ok_ : failed_).fetch_add(1);
      }
    });
  }
  ~Worker() { Stop(); }
  // Stops after at least `min_ok` more successful rounds (bounded wait), then joins.
  void Stop(int min_ok = 3) {
    if (!thread_.joinable()) return;
    const int target = ok_.load() + min_ok;
    testing::PollUntil([&] { return ok_.load() >= target || failed_.load() > 0; });
    stop_.store(true);
    thread_.join();
  }
  int ok() const { return ok_.load(); }
  int failed() const { return failed_.load(); }

 private:
  std::unique_ptr<RpcClient> client_;
  std::atomic<bool> stop_{false};
  std::atomic<int> ok_{0};
  std::atomic<int> failed_{0};
  std::thread thread_;
};

// One error Response (id 0, Unauthenticated), nothing after it, and the connection closes.
void ExpectOneRefusalThenClose(RawSocket& s, const std::string& says) {
  auto r = s.ReadResponse();
  REQUIRE(r);
  CHECK(r->id == 0);
  CHECK(r->status().code() == Status::Code::kUnauthenticated);
  CHECK_THAT(r->status().message(), Catch::Contains(says));
  CHECK_FALSE(s.ReadFrame(std::chrono::milliseconds(2000)));  // EOF, not a second frame
  CHECK(s.WaitForClose());
}

std::string LittleEndianLength(size_t n) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out;
}

}  // namespace

TEST_CASE("auth: the right secret gets in, on every connection", "[net][auth]") {
  EchoHandler handler;
  auto server = StartServer(&handler, kClusterSecret);
  RpcClientOptions o;
  o.auth_secret = kClusterSecret;
  o.connections = 3;
  RpcClient client(AddressOf(*server), o);
  for (int i = 0; i < 6; ++i) {
    auto r = client.CallSync(Body(GetRequest{1, "key"}), kCallTimeout);
    REQUIRE(r.ok());
    CHECK(std::get<GetResponse>(r->body).value == "key");
  }
  CHECK(client.stats().connects == 3);
  CHECK(server->stats().auth_failures == 0);
}

TEST_CASE("auth: refusals get one error each while an authenticated client keeps working",
          "[net][auth]") {
  EchoHandler handler;
  auto server = StartServer(&handler, kClusterSecret);
  const std::string address = AddressOf(*server);
  Worker worker(*server);

  SECTION("a client without the secret") {
    auto r = ClientWith(*server, "")->CallSync(Body(PingRequest{}), kCallTimeout);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(r.status().message(), Catch::StartsWith(address + ": "));
    CHECK_THAT(r.status().message(), Catch::Contains("requires authentication"));
  }
  SECTION("a client with a wrong secret") {
    auto r =
        ClientWith(*server, "not-the-cluster-secret!")->CallSync(Body(PingRequest{}), kCallTimeout);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(r.status().message(), Catch::StartsWith(address + ": "));
    CHECK_THAT(r.status().message(), Catch::Contains("matches none of this node's secrets"));
  }
  SECTION("a raw request before the handshake") {
    RawSocket s(server->bound_port());
    REQUIRE(s.ok());
    REQUIRE(s.SendAll(Frame(Body(PingRequest{}))));
    ExpectOneRefusalThenClose(s, "requires authentication");
  }
  SECTION("garbage before the handshake") {
    RawSocket s(server->bound_port());
    REQUIRE(s.ok());
    REQUIRE(s.SendAll("GET / HTTP/1.1\r\n\r\n"));
    ExpectOneRefusalThenClose(s, "requires authentication");
  }
  SECTION("a handshake frame of the wrong kind first") {
    RawSocket s(server->bound_port());
    REQUIRE(s.ok());
    REQUIRE(s.SendAll(auth::EncodeFrame(auth::Kind::kProof, std::string(32, 'x'))));
    ExpectOneRefusalThenClose(s, "expected an authentication hello");
  }
  SECTION("a replayed handshake") {
    // Capture a real client's handshake against a fake node that always sends one challenge.
    RawListener fake;
    RpcClientOptions o;
    o.auth_secret = kClusterSecret;
    o.connect_timeout = std::chrono::milliseconds(3000);
    RpcClient victim("127.0.0.1:" + std::to_string(fake.port()), o);
    std::atomic<bool> victim_done{false};
    victim.Call(Body(PingRequest{}), std::chrono::milliseconds(5000),
                [&](StatusOr<Response>) { victim_done.store(true); });
    RawSocket fake_side(fake.Accept());
    REQUIRE(fake_side.ok());
    auto hello = fake_side.ReadFrame();
    REQUIRE(hello);
    REQUIRE(fake_side.SendAll(auth::EncodeFrame(auth::Kind::kChallenge, std::string(32, 'n'))));
    auto proof = fake_side.ReadFrame();
    REQUIRE(proof);
    REQUIRE(auth::Parse(*proof, auth::Kind::kProof).ok());
    fake_side.ShutdownWrite();
    // Replay those exact bytes to the real node on a new connection: its challenge is fresh, so
    // the captured proof does not match it.
    RawSocket s(server->bound_port());
    REQUIRE(s.ok());
    REQUIRE(s.SendAll(LittleEndianLength(hello->size()) + *hello));
    auto challenge = s.ReadFrame();
    REQUIRE(challenge);
    auto parsed = auth::Parse(*challenge, auth::Kind::kChallenge);
    REQUIRE(parsed.ok());
    CHECK(parsed->body != std::string(32, 'n'));
    REQUIRE(s.SendAll(LittleEndianLength(proof->size()) + *proof));
    ExpectOneRefusalThenClose(s, "replayed handshake");
    CHECK(testing::PollUntil([&] { return victim_done.load(); }));
  }
  SECTION("a client that connects and sends nothing is dropped") {
    // A separate server with a short handshake timeout (the default is 5 s).
    auto quick = StartServer(&handler, kClusterSecret, "", std::chrono::milliseconds(300));
    RawSocket s(quick->bound_port());
    REQUIRE(s.ok());
    const auto start = std::chrono::steady_clock::now();
    ExpectOneRefusalThenClose(s, "no authentication handshake within 300 ms");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
    CHECK(quick->stats().auth_failures == 1);
  }
  worker.Stop();
  CHECK(worker.failed() == 0);
  CHECK(worker.ok() >= 3);
  CHECK(server->stats().auth_failures <= 1);
  CHECK(server->stats().open_connections >= 1);
}

TEST_CASE("auth: a secret on one side only fails clearly, never hangs", "[net][auth]") {
  EchoHandler handler;
  SECTION("the client has a secret, the node has none") {
    auto server = StartServer(&handler, "");
    auto r = ClientWith(*server, kClusterSecret)->CallSync(Body(PingRequest{}), kCallTimeout);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(r.status().message(), Catch::StartsWith(AddressOf(*server) + ": "));
    CHECK_THAT(r.status().message(), Catch::Contains("has no secret configured"));
    // A client without a secret is served as before.
    auto plain = ClientWith(*server, "")->CallSync(Body(PingRequest{}), kCallTimeout);
    CHECK(plain.ok());
  }
  SECTION("the node has a secret, the client has none") {
    auto server = StartServer(&handler, kClusterSecret);
    auto r = ClientWith(*server, "")->CallSync(Body(PingRequest{}), kCallTimeout);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(r.status().message(), Catch::StartsWith(AddressOf(*server) + ": "));
  }
  SECTION("a node that accepts and never answers the handshake times out") {
    RawListener silent;
    RpcClientOptions o;
    o.auth_secret = kClusterSecret;
    o.connect_timeout = std::chrono::milliseconds(300);
    RpcClient client("127.0.0.1:" + std::to_string(silent.port()), o);
    const auto start = std::chrono::steady_clock::now();
    auto r = client.CallSync(Body(PingRequest{}), std::chrono::milliseconds(5000));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kUnavailable);
    CHECK_THAT(r.status().message(), Catch::Contains("authentication timed out after 300 ms"));
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(4));
  }
}

TEST_CASE("auth: the client checks that the node knows the secret", "[net][auth]") {
  // A fake node that answers the handshake without knowing the secret.
  RawListener impostor;
  RpcClientOptions o;
  o.auth_secret = kClusterSecret;
  RpcClient client("127.0.0.1:" + std::to_string(impostor.port()), o);
  std::atomic<bool> done{false};
  Status result;
  client.Call(Body(PingRequest{}), std::chrono::milliseconds(5000), [&](StatusOr<Response> r) {
    result = r.ok() ? Status::OK() : r.status();
    done.store(true);
  });
  RawSocket fake(impostor.Accept());
  REQUIRE(fake.ok());
  auto hello = fake.ReadFrame();
  REQUIRE(hello);
  REQUIRE(fake.SendAll(auth::EncodeFrame(auth::Kind::kChallenge, std::string(32, 's'))));
  REQUIRE(fake.ReadFrame());  // the proof
  // Welcome with a MAC made with another key.
  auto cn = auth::Parse(*hello, auth::Kind::kHello);
  REQUIRE(cn.ok());
  REQUIRE(
      fake.SendAll(auth::EncodeFrame(auth::Kind::kWelcome,
                                     auth::ServerProof("some-other-secret-bytes", cn->body,
                                                       std::string(32, 's'), auth::Role::kCluster),
                                     auth::Role::kCluster)));
  REQUIRE(testing::PollUntil([&] { return done.load(); }));
  CHECK(result.code() == Status::Code::kUnauthenticated);
  CHECK_THAT(result.message(), Catch::Contains("did not prove it knows"));
  // The request itself was never sent to the impostor.
  CHECK_FALSE(fake.ReadFrame(std::chrono::milliseconds(300)));
}

TEST_CASE("auth: the client secret runs data operations, never node-to-node ones", "[net][auth]") {
  EchoHandler handler;
  auto server = StartServer(&handler, kClusterSecret, kClientSecret);
  auto client = ClientWith(*server, kClientSecret);
  auto get = client->CallSync(Body(GetRequest{1, "k"}), kCallTimeout);
  REQUIRE(get.ok());
  CHECK(get->ok());
  for (RequestBody node_only :
       {RequestBody{ReplicaWriteRequest{1, "k", 5, 1, false, "v", {}}},
        RequestBody{ReplicaWriteBatchRequest{{ReplicaWriteRequest{1, "k", 5, 1, false, "v", {}}}}},
        RequestBody{ReplicaReadRequest{1, "k"}}, RequestBody{ReplicaScanRequest{}},
        RequestBody{InstallMapRequest{"m", 0, true}}, RequestBody{StreamScanRequest{}},
        RequestBody{StreamRangeRequest{}}, RequestBody{CountRangesRequest{}},
        RequestBody{AntiEntropyRequest{TreeQuery{}}},
        RequestBody{AntiEntropyRequest{ApplyEntries{}}}}) {
    const std::string op(OpName(node_only));
    CAPTURE(op);
    auto r = client->CallSync(Body(node_only), kCallTimeout);
    REQUIRE(r.ok());  // an answer on a live connection, not a dropped one
    CHECK(r->status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(r->status().message(), Catch::StartsWith(op + " needs the cluster secret"));
  }
  // The admin's repair command is a client's to send (the node compares with its own secret).
  auto repair = client->CallSync(Body(AntiEntropyRequest{RepairCommand{}}), kCallTimeout);
  REQUIRE(repair.ok());
  CHECK(repair->ok());
  // Still the same connection, still serving.
  auto ping = client->CallSync(Body(PingRequest{}), kCallTimeout);
  CHECK(ping.ok());
  CHECK(client->stats().connects == 1);
  // The cluster secret may send them (the echo handler answers ping to anything else).
  auto full =
      ClientWith(*server, kClusterSecret)->CallSync(Body(ReplicaReadRequest{1, "k"}), kCallTimeout);
  REQUIRE(full.ok());
  CHECK(full->ok());
}

}  // namespace shardkv::net
