// Authentication through the Node, Client and Admin APIs (design.md "Authentication"): secret
// files, a cluster whose nodes authenticate to each other, the client-secret role, refusals that
// are not retried, and protected mode.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "net/messages.h"
#include "net/rpc_client.h"
#include "node/node_options.h"
#include "shardkv/admin.h"
#include "shardkv/client.h"
#include "shardkv/node.h"
#include "shardkv/options.h"
#include "shardkv/secret_file.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

namespace shardkv {
namespace {

using testing::TempDir;

constexpr auto kWait = std::chrono::seconds(10);

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& bytes,
                      mode_t mode = 0600) {
  const std::string path = dir.Sub(name);
  std::ofstream(path, std::ios::binary) << bytes;
  REQUIRE(::chmod(path.c_str(), mode) == 0);
  return path;
}

bool PollUntil(const std::function<bool()>& pred) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Three in-process nodes on 127.0.0.1, formed into one cluster (RF 3, W 2), every one with the
// cluster secret and, optionally, a client secret.
class SecretCluster {
 public:
  explicit SecretCluster(bool with_client_secret = false) {
    cluster_file = WriteFile(dir, "cluster.secret", "the-cluster-secret-0123456789\n");
    wrong_file = WriteFile(dir, "wrong.secret", "another-clusters-secret-xyz");
    if (with_client_secret) client_file = WriteFile(dir, "client.secret", "client-secret-abcdefgh");
  }
  ~SecretCluster() {
    for (auto& n : nodes) {
      if (n) n->Stop();
    }
  }

  NodeOptions OptionsFor(uint32_t id, uint16_t port, const std::string& secret_file) const {
    NodeOptions o;
    o.id = id;
    o.listen = "127.0.0.1:" + std::to_string(port);
    o.data_dir = dir.Sub("node-" + std::to_string(id));
    o.io_threads = 1;
    o.auth_secret_file = secret_file;
    o.client_secret_file = client_file;
    return o;
  }

  void Start() {
    std::vector<ClusterNode> members;
    for (uint32_t id = 1; id <= 3; ++id) {
      auto node = Node::Start(OptionsFor(id, 0, cluster_file));
      REQUIRE(node.ok());
      addresses.push_back((*node)->address());
      nodes.push_back(std::move(node).value());
      members.push_back({id, addresses.back(), 1.0, NodeState::kUp});
    }
    auto admin = MakeAdmin(cluster_file);
    REQUIRE(admin.ok());
    auto map = (*admin)->FormCluster(members, ClusterParams{}, 0xA117);
    REQUIRE(map.ok());
  }

  // Restarts node `id` on its port with another secret file.
  void Restart(uint32_t id, const std::string& secret_file) {
    nodes[id - 1]->Stop();
    nodes[id - 1].reset();
    std::string host;
    uint16_t port = 0;
    REQUIRE(net::ParseHostPort(addresses[id - 1], &host, &port).ok());
    auto node = Node::Start(OptionsFor(id, port, secret_file));
    REQUIRE(node.ok());
    nodes[id - 1] = std::move(node).value();
  }

  StatusOr<std::unique_ptr<Client>> Connect(const std::string& secret_file,
                                            uint32_t timeout_ms = 5000) const {
    ClientOptions o;
    o.seeds = addresses;
    o.auth_secret_file = secret_file;
    o.timeout_ms = timeout_ms;
    return Client::Connect(o);
  }

  StatusOr<std::unique_ptr<Admin>> MakeAdmin(const std::string& secret_file) const {
    AdminOptions o;
    o.seeds = addresses;
    o.auth_secret_file = secret_file;
    return Admin::Create(o);
  }

  // What node `id` holds for `key`, asked with the cluster secret.
  StatusOr<net::ReplicaReadResponse> LocalRead(uint32_t id, const std::string& key,
                                               uint64_t token) const {
    net::RpcClientOptions o;
    o.auth_secret = "the-cluster-secret-0123456789";
    net::RpcClient rpc(addresses[id - 1], o);
    net::Request req;
    req.body = net::ReplicaReadRequest{token, key};
    auto reply = rpc.CallSync(std::move(req), std::chrono::milliseconds(5000));
    if (!reply.ok()) return reply.status();
    if (!reply->ok()) return reply->status();
    return std::get<net::ReplicaReadResponse>(reply->body);
  }

  TempDir dir;
  std::string cluster_file, wrong_file, client_file;
  std::vector<std::unique_ptr<Node>> nodes;
  std::vector<std::string> addresses;
};

}  // namespace

TEST_CASE("secret file: the rules", "[auth][node]") {
  TempDir dir;
  SECTION("trailing whitespace is stripped, leading bytes are kept") {
    auto s =
        LoadSecretFile(WriteFile(dir, "s", " 0123456789abcdef \r\n\t\n"), "--auth-secret-file");
    REQUIRE(s.ok());
    CHECK(s->secret == " 0123456789abcdef");
    CHECK(s->warning.empty());
  }
  SECTION("any bytes") {
    const std::string bytes("\x00\x01\xff\x80secret-bytes-here", 21);
    auto s = LoadSecretFile(WriteFile(dir, "s", bytes), "--auth-secret-file");
    REQUIRE(s.ok());
    CHECK(s->secret == bytes);
  }
  SECTION("too short after stripping") {
    const std::string path = WriteFile(dir, "s", "0123456789abcde\n\n\n");  // 15 bytes
    auto s = LoadSecretFile(path, "--auth-secret-file");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(s.status().message(), Catch::Contains("--auth-secret-file " + path));
    CHECK_THAT(s.status().message(), Catch::Contains("15 bytes"));
    CHECK_THAT(s.status().message(), Catch::Contains("at least 16 bytes"));
  }
  SECTION("missing") {
    auto s = LoadSecretFile(dir.Sub("nope"), "--client-secret-file");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(s.status().message(), Catch::Contains("--client-secret-file " + dir.Sub("nope")));
  }
  SECTION("world-readable: a warning, not a refusal") {
    auto s = LoadSecretFile(WriteFile(dir, "s", "0123456789abcdef", 0644), "--auth-secret-file");
    REQUIRE(s.ok());
    CHECK(s->secret == "0123456789abcdef");
    CHECK_THAT(s->warning, Catch::Contains("readable by every user (mode 644)"));
  }
  SECTION("a bad file fails Client::Connect and Admin::Create with InvalidArgument") {
    const std::string path = WriteFile(dir, "short", "short");
    ClientOptions co;
    co.seeds = {"127.0.0.1:1"};
    co.auth_secret_file = path;
    auto c = Client::Connect(co);
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(c.status().message(), Catch::Contains(path));
    AdminOptions ao;
    ao.auth_secret_file = path;
    auto a = Admin::Create(ao);
    REQUIRE_FALSE(a.ok());
    CHECK(a.status().code() == Status::Code::kInvalidArgument);
  }
}

TEST_CASE("auth: a cluster with a secret replicates between its nodes", "[auth][node]") {
  SecretCluster c;
  c.Start();
  auto client = c.Connect(c.cluster_file);
  REQUIRE(client.ok());
  for (int i = 0; i < 20; ++i) {
    const std::string key = "key-" + std::to_string(i);
    REQUIRE((*client)->Put(key, "value-" + std::to_string(i)).ok());
    auto got = (*client)->Get(key);
    REQUIRE(got.ok());
    CHECK(*got == "value-" + std::to_string(i));
  }
  // Every node holds every key (RF 3): the replica writes between nodes were authenticated.
  const uint64_t token = (*client)->map()->TokenOf("key-7");
  for (uint32_t id = 1; id <= 3; ++id) {
    CAPTURE(id);
    CHECK(PollUntil([&] {
      auto r = c.LocalRead(id, "key-7", token);
      return r.ok() && r->found && r->value == "value-7";
    }));
  }
  // The Admin with the secret sees the cluster.
  auto admin = c.MakeAdmin(c.cluster_file);
  REQUIRE(admin.ok());
  auto map = (*admin)->NewestMap();
  REQUIRE(map.ok());
  CHECK(map->nodes().size() == 3);
}

TEST_CASE("auth: without the secret, or with a wrong one, Client and Admin get Unauthenticated",
          "[auth][node]") {
  SecretCluster c;
  c.Start();
  const auto start = std::chrono::steady_clock::now();
  SECTION("a client without a secret") {
    auto client = c.Connect("", 20000);
    REQUIRE_FALSE(client.ok());
    CHECK(client.status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(client.status().message(), Catch::Contains(c.addresses[0] + ": "));
  }
  SECTION("a client with a wrong secret") {
    auto client = c.Connect(c.wrong_file, 20000);
    REQUIRE_FALSE(client.ok());
    CHECK(client.status().code() == Status::Code::kUnauthenticated);
    CHECK_THAT(client.status().message(), Catch::Contains(c.addresses[0] + ": "));
  }
  SECTION("an Admin with a wrong secret: refused, not unreachable") {
    auto admin = c.MakeAdmin(c.wrong_file);
    REQUIRE(admin.ok());
    auto map = (*admin)->NewestMap();
    REQUIRE_FALSE(map.ok());
    CHECK(map.status().code() == Status::Code::kUnauthenticated);
    NodeProbe p = (*admin)->Probe(c.addresses[1]);
    CHECK(p.reachable);
    CHECK(p.error.code() == Status::Code::kUnauthenticated);
    AdminReply status = (*admin)->ChangeStatus();
    CHECK(status.status.code() == Status::Code::kUnauthenticated);
    CHECK_FALSE(status.unreachable);
  }
  // Refusals are immediate: no retries until the 20 s timeout.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("auth: a node that refuses the secret is not retried on another replica",
          "[auth][node]") {
  SecretCluster c;
  c.Start();
  auto client = c.Connect(c.cluster_file);
  REQUIRE(client.ok());
  // Node 1 comes back with another cluster's secret: it refuses this client's connection.
  c.Restart(1, c.wrong_file);
  // A key whose first replica is node 1: nodes 2 and 3 could take the write (W 2), but the
  // client does not retry a refused secret elsewhere.
  std::string key;
  for (int i = 0; i < 1000 && key.empty(); ++i) {
    const std::string k = "k" + std::to_string(i);
    if ((*client)->map()->ReadReplicas((*client)->map()->TokenOf(k)).front() == 1) key = k;
  }
  REQUIRE_FALSE(key.empty());
  auto put = (*client)->Put(key, "v");
  REQUIRE_FALSE(put.ok());
  CHECK(put.status().code() == Status::Code::kUnauthenticated);
  CHECK_THAT(put.status().message(), Catch::Contains(c.addresses[0]));
  CHECK_THAT(put.status().message(), Catch::Contains("matches none of this node's secrets"));
}

TEST_CASE("auth: the client secret runs data and admin operations, never node-to-node ones",
          "[auth][node]") {
  SecretCluster c(/*with_client_secret=*/true);
  c.Start();
  auto client = c.Connect(c.client_file);
  REQUIRE(client.ok());
  REQUIRE((*client)->Put("a", "1").ok());
  auto got = (*client)->Get("a");
  REQUIRE(got.ok());
  CHECK(*got == "1");
  auto admin = c.MakeAdmin(c.client_file);
  REQUIRE(admin.ok());
  CHECK((*admin)->NewestMap().ok());
  CHECK((*admin)->ChangeStatus().status.ok());
  CHECK((*admin)->NodeStats(c.addresses[0]).ok());
  // A node-to-node request on a client-secret connection.
  net::RpcClientOptions o;
  o.auth_secret = "client-secret-abcdefgh";
  net::RpcClient rpc(c.addresses[0], o);
  net::Request req;
  req.body = net::ReplicaWriteRequest{1, "a", 1, 1, false, "forged", {}};
  auto r = rpc.CallSync(std::move(req), std::chrono::milliseconds(5000));
  REQUIRE(r.ok());
  CHECK(r->status().code() == Status::Code::kUnauthenticated);
  CHECK_THAT(r->status().message(), Catch::Contains("replicaWrite needs the cluster secret"));
  // Forming a cluster (map installs) needs the cluster secret too. Here FormCluster's own check
  // refuses first (the node is a member); the installMap refusal on a client-secret connection
  // is tests/net/auth_handshake_test.cc's.
  auto formed =
      (*admin)->FormCluster({{9, c.addresses[0], 1.0, NodeState::kUp}}, ClusterParams{}, 0xBAD);
  REQUIRE_FALSE(formed.ok());
  CHECK((formed.status().code() == Status::Code::kUnauthenticated ||
         formed.status().code() == Status::Code::kFailedPrecondition));
  // The forged write did not land.
  got = (*client)->Get("a");
  REQUIRE(got.ok());
  CHECK(*got == "1");
}

TEST_CASE("protected mode: a non-loopback listener needs a secret or --insecure", "[auth][node]") {
  CHECK(node::IsLoopbackHost("127.0.0.1"));
  CHECK(node::IsLoopbackHost("127.3.2.1"));
  CHECK(node::IsLoopbackHost("::1"));
  CHECK(node::IsLoopbackHost("localhost"));
  CHECK(node::IsLoopbackHost("::ffff:127.0.0.1"));
  CHECK_FALSE(node::IsLoopbackHost("0.0.0.0"));
  CHECK_FALSE(node::IsLoopbackHost("::"));
  CHECK_FALSE(node::IsLoopbackHost("10.1.2.3"));
  CHECK_FALSE(node::IsLoopbackHost("db.example.com"));

  TempDir dir;
  NodeOptions o;
  o.id = 1;
  o.listen = "0.0.0.0:0";
  o.data_dir = dir.Sub("node");
  SECTION("refused without a secret") {
    auto node = Node::Start(o);
    REQUIRE_FALSE(node.ok());
    CHECK(node.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(node.status().message(), Catch::Contains("--listen 0.0.0.0"));
    CHECK_THAT(node.status().message(), Catch::Contains("--auth-secret-file"));
    CHECK_THAT(node.status().message(), Catch::Contains("--insecure"));
    CHECK_FALSE(std::filesystem::exists(o.data_dir));  // refused before touching anything
  }
  SECTION("allowed with --insecure") {
    o.insecure = true;
    auto node = Node::Start(o);
    REQUIRE(node.ok());
    (*node)->Stop();
  }
  SECTION("allowed with a secret") {
    o.auth_secret_file = WriteFile(dir, "s", "0123456789abcdef0123");
    auto node = Node::Start(o);
    REQUIRE(node.ok());
    (*node)->Stop();
  }
  SECTION("a client secret alone is refused") {
    o.listen = "127.0.0.1:0";
    o.client_secret_file = WriteFile(dir, "s", "0123456789abcdef0123");
    auto node = Node::Start(o);
    REQUIRE_FALSE(node.ok());
    CHECK_THAT(node.status().message(), Catch::Contains("needs --auth-secret-file"));
  }
}

}  // namespace shardkv

namespace shardkv {

TEST_CASE("TLS: a node serves TLS clients only, and refuses certificates it cannot use",
          "[auth][node][tls]") {
  TempDir dir;
  testing::TestPki ca(dir.path(), "cluster");
  testing::TestCert node_cert = ca.Issue("node", {"IP:127.0.0.1"});
  testing::TestCert client_cert = ca.Issue("client", {});
  NodeOptions o;
  o.id = 1;
  o.listen = "127.0.0.1:0";
  o.data_dir = dir.Sub("node");
  o.tls_ca_file = ca.ca_file();

  SECTION("only some of the files") {
    o.tls_cert_file = node_cert.cert_file;
    auto node = Node::Start(o);
    REQUIRE_FALSE(node.ok());
    CHECK(node.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(node.status().message(), Catch::Contains("go together"));
  }
  SECTION("an expired certificate, refused before the data directory is touched") {
    testing::TestCert expired = ca.Issue("expired", {"IP:127.0.0.1"}, -7200, -3600);
    o.tls_cert_file = expired.cert_file;
    o.tls_key_file = expired.key_file;
    auto node = Node::Start(o);
    REQUIRE_FALSE(node.ok());
    CHECK_THAT(node.status().message(), Catch::Contains("--tls-cert"));
    CHECK_THAT(node.status().message(), Catch::Contains("expired on"));
    CHECK_FALSE(std::filesystem::exists(o.data_dir));
  }
  SECTION("good certificates: formed and used over TLS; a plain client is refused") {
    o.tls_cert_file = node_cert.cert_file;
    o.tls_key_file = node_cert.key_file;
    auto node = Node::Start(o);
    INFO(node.status().ToString());
    REQUIRE(node.ok());
    const std::string address = (*node)->address();
    AdminOptions ao;
    ao.seeds = {address};
    ao.tls_ca_file = ca.ca_file();
    ao.tls_cert_file = client_cert.cert_file;
    ao.tls_key_file = client_cert.key_file;
    auto admin = Admin::Create(ao);
    REQUIRE(admin.ok());
    ClusterParams params;
    params.replication_factor = params.write_quorum = params.read_quorum = 1;
    auto formed = (*admin)->FormCluster({{1, address, 1.0, NodeState::kUp}}, params, 0);
    INFO(formed.status().ToString());
    REQUIRE(formed.ok());

    ClientOptions co;
    co.seeds = {address};
    co.tls_ca_file = ao.tls_ca_file;
    co.tls_cert_file = ao.tls_cert_file;
    co.tls_key_file = ao.tls_key_file;
    auto client = Client::Connect(co);
    INFO(client.status().ToString());
    REQUIRE(client.ok());
    REQUIRE((*client)->Put("k", "v").ok());
    auto got = (*client)->Get("k");
    REQUIRE(got.ok());
    CHECK(*got == "v");

    ClientOptions plain;
    plain.seeds = {address};
    plain.timeout_ms = 2000;
    auto refused = Client::Connect(plain);
    CHECK_FALSE(refused.ok());
    ClientOptions partial = plain;
    partial.tls_ca_file = ca.ca_file();
    auto bad = Client::Connect(partial);
    REQUIRE_FALSE(bad.ok());
    CHECK(bad.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(bad.status().message(), Catch::Contains("needs all three"));
  }
}

}  // namespace shardkv
