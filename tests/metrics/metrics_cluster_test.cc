// Every node of a 3-node `cluster up` cluster serves metrics on the port `cluster status --json`
// names; through a scale-out (`cluster add-node`) the change's metrics move, the new node's
// stream counters grow, client errors stay 0, and every scrape passes `promtool check metrics`.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "metrics/http_get.h"
#include "metrics/promtool.h"
#include "shardkv/client.h"
#include "testing/cli_harness.h"

using namespace shardkv;
using shardkv::testing::Field;
using shardkv::testing::HttpGet;
using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::SampleValue;

namespace {

struct NodeEndpoints {
  std::string address;
  uint16_t metrics_port = 0;
};

// id -> (address, metrics port) from `cluster status --json`.
std::map<int, NodeEndpoints> Endpoints(const LocalCluster& c) {
  ProcessResult status = c.Run({"cluster", "status", "--json"});
  INFO(status.Text());
  REQUIRE(status.exit_code == 0);
  std::map<int, NodeEndpoints> out;
  const size_t begin = status.out.find("\"nodes\":[");
  REQUIRE(begin != std::string::npos);
  const std::string array = status.out.substr(begin);
  const std::regex object_re("\\{[^{}]*\\}");
  for (auto it = std::sregex_iterator(array.begin(), array.end(), object_re);
       it != std::sregex_iterator(); ++it) {
    const std::string o = it->str();
    if (Field(o, "id").empty()) continue;
    NodeEndpoints e;
    e.address = Field(o, "address");
    const std::string metrics = Field(o, "metrics_address");
    INFO(o);
    REQUIRE(metrics.rfind("127.0.0.1:", 0) == 0);
    e.metrics_port = static_cast<uint16_t>(std::stoi(metrics.substr(10)));
    out[std::stoi(Field(o, "id"))] = e;
  }
  return out;
}

std::string MustScrape(uint16_t port) {
  auto reply = HttpGet(port, "/metrics");
  REQUIRE(reply.status == 200);
  const auto check = testing::PromtoolCheckMetrics(reply.body);
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.empty());
  return reply.body;
}

}  // namespace

TEST_CASE("metrics cluster: every node's metrics through a scale-out", "[multiprocess]") {
  LocalCluster c;
  ProcessResult up = c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60"});
  INFO(up.Text());
  REQUIRE(up.exit_code == 0);
  auto nodes = Endpoints(c);
  REQUIRE(nodes.size() == 3);
  std::set<uint16_t> ports;
  for (const auto& [id, e] : nodes) {
    ports.insert(e.metrics_port);
    CHECK(HttpGet(e.metrics_port, "/healthz").status == 200);
    CHECK(HttpGet(e.metrics_port, "/readyz").status == 200);
    const std::string text = MustScrape(e.metrics_port);
    CHECK(SampleValue(text, "shardkv_node_id") == id);
    CHECK(text.find("shardkv_change_info{") == std::string::npos);
  }
  CHECK(ports.size() == 3);

  ClientOptions co;
  co.seeds = {nodes.at(1).address};
  auto client = Client::Connect(co);
  REQUIRE(client.ok());
  constexpr int kKeys = 600;
  for (int i = 0; i < kKeys; ++i) {
    REQUIRE((*client)->Put("key" + std::to_string(i), std::string(200, 'x')).ok());
  }
  // Each put is counted once, by the node that coordinated it; its coordinator writes its own
  // copy locally and sends the other two (RF 3) as replica writes.
  double puts = 0, replica_writes = 0;
  for (const auto& [id, e] : nodes) {
    const std::string text = MustScrape(e.metrics_port);
    puts += SampleValue(text, "shardkv_requests_total{op=\"put\",result=\"ok\"}");
    replica_writes +=
        SampleValue(text, "shardkv_requests_total{op=\"replica_write\",result=\"ok\"}");
  }
  CHECK(puts == kKeys);
  CHECK(replica_writes >= kKeys * 2);

  ProcessResult add = c.Run({"cluster", "add-node", "--yes"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  nodes = Endpoints(c);
  REQUIRE(nodes.size() == 4);

  // Poll node 1's scrape until the change is done; every scrape on the way must be valid.
  std::set<std::string> states_seen;
  bool done = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (int round = 0; round < 2000 && !done && std::chrono::steady_clock::now() < deadline;
       ++round) {
    const std::string text = MustScrape(nodes.at(1).metrics_port);
    for (const char* state : {"planned", "streaming", "read_new", "new_only", "cleanup", "done",
                              "failed", "cancelled"}) {
      if (SampleValue(text, std::string("shardkv_change_state{state=\"") + state + "\"}") == 1) {
        states_seen.insert(state);
      }
    }
    done = SampleValue(text, "shardkv_change_state{state=\"done\"}") == 1;
    if (!done) {
      HttpGet(nodes.at(1).metrics_port, "/healthz");  // paces the poll by a round trip
    }
  }
  INFO("states seen:" << [&] {
    std::string s;
    for (const auto& st : states_seen) s += " " + st;
    return s;
  }());
  REQUIRE(done);
  CHECK(states_seen.count("failed") == 0);

  // The change's 64-bit id, exactly as the CLI prints it, is every node's label.
  const ProcessResult rebalance = c.Run({"rebalance", "status", "--json"});
  const std::string change_id = Field(rebalance.out, "change_id");
  INFO(rebalance.Text());
  REQUIRE(change_id.size() > 5);
  for (const auto& [id, e] : nodes) {
    INFO("node " << id);
    const std::string text = MustScrape(e.metrics_port);
    CHECK(SampleValue(text, "shardkv_change_info{change_id=\"" + change_id + "\"}") == 1);
    CHECK(SampleValue(text, "shardkv_change_planned_copies") > 0);
    CHECK(SampleValue(text, "shardkv_change_planned_bytes") > 0);
    CHECK(SampleValue(text, "shardkv_change_client_errors") == 0);
    CHECK(SampleValue(text, "shardkv_client_errors_total") == 0);
    CHECK(SampleValue(text, "shardkv_change_end_time_seconds") > 0);
    CHECK(HttpGet(e.metrics_port, "/readyz").status == 200);
  }
  // The new node received copies; the map records what moved once the change is done.
  const std::string newcomer = MustScrape(nodes.at(4).metrics_port);
  CHECK(SampleValue(newcomer, "shardkv_stream_entries_pulled_total") > 0);
  CHECK(SampleValue(newcomer, "shardkv_stored_keys") >= 0);
  CHECK(SampleValue(MustScrape(nodes.at(1).metrics_port), "shardkv_change_moved_copies") > 0);

  // A restarted node serves metrics again (cluster status names its listener), ready, with its
  // counters started afresh and the last change still reported from the map.
  REQUIRE(c.Run({"cluster", "stop-node", "2"}).exit_code == 0);
  ProcessResult start = c.Run({"cluster", "start-node", "2", "--wait", "60"});
  INFO(start.Text());
  REQUIRE(start.exit_code == 0);
  nodes = Endpoints(c);
  const uint16_t port = nodes.at(2).metrics_port;
  bool ready = false;
  for (int i = 0; i < 300 && !ready; ++i) {
    ready = HttpGet(port, "/readyz").status == 200;
    if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // bounded poll
  }
  REQUIRE(ready);
  const std::string after = MustScrape(port);
  CHECK(SampleValue(after, "shardkv_node_id") == 2);
  CHECK(SampleValue(after, "shardkv_requests_total{op=\"put\",result=\"ok\"}") <=
        0);  // absent or 0
  CHECK(SampleValue(after, "shardkv_change_state{state=\"done\"}") == 1);
}
