// The metrics listener of a real in-process node (NodeOptions::metrics_listen): a scrape after
// puts and gets shows the counters moved and passes `promtool check metrics`; /healthz and
// /readyz on an unformed and a formed node; bad requests answered with 4xx and harmless;
// protected mode; Stop() with a connection open.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <string>

#include "metrics/http_get.h"
#include "metrics/promtool.h"
#include "shardkv/node.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::testing::HttpExchange;
using shardkv::testing::HttpGet;
using shardkv::testing::SampleValue;
using shardkv::testing::TempDir;

namespace {

NodeOptions MetricsOptions(const TempDir& dir) {
  NodeOptions o;
  o.data_dir = dir.Sub("node");
  o.metrics_listen = "127.0.0.1:0";
  return o;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

}  // namespace

TEST_CASE("metrics node: a scrape after puts and gets shows them and is valid") {
  TempDir dir;
  auto node = testing::MustStartFormed(MetricsOptions(dir));
  const uint16_t port = node->metrics_port();
  REQUIRE(port != 0);
  CHECK(ReadFile(dir.Sub("node/metrics_port")) == std::to_string(port));

  auto before = HttpGet(port, "/metrics");
  REQUIRE(before.status == 200);
  CHECK(before.headers.find("text/plain; version=0.0.4") != std::string::npos);
  const std::string get_ok = "shardkv_requests_total{op=\"get\",result=\"ok\"}";
  const std::string put_ok = "shardkv_requests_total{op=\"put\",result=\"ok\"}";
  const double gets_before = SampleValue(before.body, get_ok);
  const double puts_before = SampleValue(before.body, put_ok);
  REQUIRE(gets_before >= 0);
  REQUIRE(puts_before >= 0);

  auto client = testing::MustConnect(node->address());
  for (int i = 0; i < 20; ++i) {
    REQUIRE(client->Put("key" + std::to_string(i), std::string(100, 'v')).ok());
  }
  for (int i = 0; i < 25; ++i) {  // 5 of them miss: still "ok" (an answer)
    REQUIRE(client->Get("key" + std::to_string(i)).status().code() != Status::Code::kUnavailable);
  }

  auto after = HttpGet(port, "/metrics");
  REQUIRE(after.status == 200);
  INFO(after.body);
  CHECK(SampleValue(after.body, put_ok) == puts_before + 20);
  CHECK(SampleValue(after.body, get_ok) == gets_before + 25);
  CHECK(SampleValue(after.body, "shardkv_request_duration_seconds_count{op=\"put\"}") >= 20);
  CHECK(SampleValue(after.body,
                    "shardkv_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"}") >= 25);
  CHECK(SampleValue(after.body, "shardkv_ready") == 1);
  CHECK(SampleValue(after.body, "shardkv_formed") == 1);
  CHECK(SampleValue(after.body, "shardkv_node_id") == 1);
  CHECK(SampleValue(after.body, "shardkv_client_errors_total") == 0);
  CHECK(SampleValue(after.body, "shardkv_quorum_failures_total") == 0);
  CHECK(SampleValue(after.body, "shardkv_hints_pending") == 0);
  CHECK(after.body.find("shardkv_change_info{") == std::string::npos);  // no change yet
  // RocksDB's figures are there (the store is open).
  CHECK(SampleValue(after.body, "shardkv_rocksdb_running_compactions") >= 0);
  CHECK(SampleValue(after.body, "shardkv_rocksdb_write_stops_total") >= 0);
  CHECK(SampleValue(after.body, "shardkv_rocksdb_compactions_total") >= 0);
  CHECK(after.body.find("shardkv_build_info{version=\"") != std::string::npos);

  // A flush and compaction move the estimates and RocksDB's compaction count.
  REQUIRE(node->Compact().ok());
  auto compacted = HttpGet(port, "/metrics");
  REQUIRE(compacted.status == 200);
  CHECK(SampleValue(compacted.body, "shardkv_stored_keys") >= 1);
  CHECK(SampleValue(compacted.body, "shardkv_stored_bytes") > 0);
  CHECK(SampleValue(compacted.body, "shardkv_rocksdb_compactions_total") >= 1);

  const auto check = testing::PromtoolCheckMetrics(compacted.body);
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.empty());
}

TEST_CASE("metrics node: healthz and readyz on an unformed node, then formed") {
  TempDir dir;
  auto node = testing::MustStart(MetricsOptions(dir));
  const uint16_t port = node->metrics_port();
  REQUIRE(port != 0);
  auto health = HttpGet(port, "/healthz");
  CHECK(health.status == 200);
  CHECK(health.body == "ok\n");
  auto ready = HttpGet(port, "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("unformed") != std::string::npos);
  CHECK(ready.body.find('\n') == ready.body.size() - 1);  // one line
  auto scrape = HttpGet(port, "/metrics");
  REQUIRE(scrape.status == 200);
  CHECK(SampleValue(scrape.body, "shardkv_ready") == 0);
  CHECK(SampleValue(scrape.body, "shardkv_formed") == 0);
  const auto check = testing::PromtoolCheckMetrics(scrape.body);
  INFO(check.output);
  CHECK(check.exit_code == 0);

  testing::MustFormAlone(*node);
  ready = HttpGet(port, "/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.body == "ready\n");
  CHECK(HttpGet(port, "/healthz").status == 200);
}

TEST_CASE("metrics node: bad requests get 4xx and the node keeps serving") {
  TempDir dir;
  auto node = testing::MustStartFormed(MetricsOptions(dir));
  const uint16_t port = node->metrics_port();
  CHECK(HttpGet(port, "/nope").status == 404);
  CHECK(HttpExchange(port,
                     "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                     "Connection: close\r\n\r\n")
            .status == 405);
  // Garbage, a request line without a version, a huge header, a body past the limit.
  const int garbage =
      HttpExchange(port, std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\r\n\r\n", 14)).status;
  CHECK((garbage == 0 || (garbage >= 400 && garbage < 500)));
  const int no_version = HttpExchange(port, "GET /metrics\r\n\r\n").status;
  CHECK((no_version == 0 || (no_version >= 400 && no_version < 500)));
  const int huge_header =
      HttpExchange(port,
                   "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(64 << 10, 'a') + "\r\n\r\n")
          .status;
  CHECK((huge_header == 0 || (huge_header >= 400 && huge_header < 500)));
  // A body past max_body_bytes is refused before any handler runs; a GET's body is never read.
  const std::string big(1000000, 'b');
  CHECK(HttpExchange(port,
                     "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n"
                     "Connection: close\r\n\r\n" +
                         big)
            .status == 413);
  const int get_body = HttpExchange(port,
                                    "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: "
                                    "1000000\r\nConnection: close\r\n\r\n" +
                                        big)
                           .status;
  CHECK((get_body == 200 || get_body == 413));
  // The node and its listener are unharmed.
  auto scrape = HttpGet(port, "/metrics");
  CHECK(scrape.status == 200);
  auto client = testing::MustConnect(node->address());
  CHECK(client->Put("k", "v").ok());
}

TEST_CASE("metrics node: Stop() returns within seconds with a connection open") {
  TempDir dir;
  auto node = testing::MustStartFormed(MetricsOptions(dir));
  const uint16_t port = node->metrics_port();
  // A keep-alive client that asked once and then went quiet, and one that sent half a request.
  const int idle = ::socket(AF_INET, SOCK_STREAM, 0);
  const int half = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(idle, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  REQUIRE(::connect(half, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  const std::string get = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(::send(idle, get.data(), get.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(get.size()));
  REQUIRE(::send(half, "GET /met", 8, MSG_NOSIGNAL) == 8);
  const auto start = std::chrono::steady_clock::now();
  node->Stop();
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took < std::chrono::seconds(8));
  ::close(idle);
  ::close(half);
  CHECK(HttpGet(port, "/healthz").status == 0);  // nothing listens any more
}

TEST_CASE("metrics node: protected mode and bad addresses") {
  TempDir dir;
  NodeOptions o = MetricsOptions(dir);
  o.metrics_listen = "0.0.0.0:0";
  auto refused = Node::Start(o);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().IsInvalidArgument());
  CHECK(refused.status().message().find("--metrics-listen") != std::string::npos);
  o.insecure = true;
  auto insecure = Node::Start(o);
  INFO(insecure.status().ToString());
  REQUIRE(insecure.ok());
  CHECK((*insecure)->metrics_port() != 0);
  (*insecure)->Stop();

  NodeOptions bad = MetricsOptions(dir);
  bad.metrics_listen = "nonsense";
  auto s = Node::Start(bad);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("--metrics-listen") != std::string::npos);
}

TEST_CASE("metrics node: without metrics_listen there is no listener and no metrics_port") {
  TempDir dir;
  NodeOptions o;
  o.data_dir = dir.Sub("node");
  auto node = testing::MustStart(o);
  CHECK(node->metrics_port() == 0);
  CHECK_FALSE(std::ifstream(dir.Sub("node/metrics_port")).good());
}

TEST_CASE("metrics node: a metrics port in use is refused, not shared") {
  // httplib's default socket options set SO_REUSEPORT, which would let a second node bind the
  // same port and answer half the scrapes; the listener sets SO_REUSEADDR only.
  TempDir dir_a, dir_b;
  auto a = testing::MustStartFormed(MetricsOptions(dir_a));
  NodeOptions o = MetricsOptions(dir_b);
  o.metrics_listen = "127.0.0.1:" + std::to_string(a->metrics_port());
  auto b = Node::Start(o);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().code() == Status::Code::kIOError);
  CHECK(b.status().message().find("--metrics-listen") != std::string::npos);
  CHECK(HttpGet(a->metrics_port(), "/healthz").status == 200);
}
