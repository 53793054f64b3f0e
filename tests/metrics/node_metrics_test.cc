// The node's metric families (src/metrics/node_metrics.h), rendered from a hand-made snapshot:
// every stat has a decision, the whole scrape passes `promtool check metrics`, and each source
// lands in its family.
#include "metrics/node_metrics.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "metrics/histogram.h"
#include "metrics/promtool.h"
#include "shardkv/stats.h"

using namespace shardkv;
using namespace shardkv::metrics;

namespace {

NodeMetricsSnapshot FullSnapshot() {
  NodeMetricsSnapshot s;
  s.version = "0.9.0";
  s.node_id = 3;
  s.ready = true;
  int64_t n = 1;
  for (const auto& c : stats::kCounters) s.counters[std::string(c.name)] = n++;
  for (const auto& g : stats::kGauges) s.gauges[std::string(g.name)] = 0.5;
  s.requests = {{"get", "ok", 10}, {"get", "unavailable", 2}, {"put", "ok", 7}};
  Histogram h;
  for (uint64_t us : {50, 150, 900, 30000}) h.Record(us);
  s.latency = {{"get", h.Snapshot()}, {"put", Histogram().Snapshot()}};
  s.rocksdb_int = {{"rocksdb.num-running-compactions", 1},
                   {"rocksdb.estimate-pending-compaction-bytes", 4096},
                   {"rocksdb.is-write-stopped", 0}};
  s.rocksdb_cfstats = {{"compaction.Sum.CompCount", "4"},
                       {"compaction.Sum.WriteGB", "0.5"},
                       {"io_stalls.total_stop", "2"}};
  ChangeRecord rec;
  rec.change_id = 77;
  rec.state = ChangeState::kStreaming;
  rec.planned_copies = 1000;
  rec.planned_bytes = 64000;
  rec.moved_copies = 10;
  rec.rate_bytes_per_s = 1 << 20;
  rec.started_ms = 1700000000500;
  s.change = rec;
  s.change_client_errors = 0;
  return s;
}

bool Has(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.rfind(line + "\n", 0) == 0;
}

}  // namespace

TEST_CASE("node metrics: every stat of stats.h is exported or skipped on purpose") {
  std::set<std::string> decided;
  std::set<std::string> metrics;
  for (const StatExport& e : StatExports()) {
    CHECK(decided.insert(std::string(e.stat)).second);
    CHECK(metrics.insert(std::string(e.metric)).second);
    CHECK(e.metric.substr(0, 8) == "shardkv_");
  }
  for (std::string_view s : SkippedStats()) CHECK(decided.insert(std::string(s)).second);
  std::set<std::string> declared;
  for (const auto& c : stats::kCounters) declared.insert(std::string(c.name));
  for (const auto& g : stats::kGauges) declared.insert(std::string(g.name));
  CHECK(decided == declared);
}

TEST_CASE("node metrics: a full scrape is valid for promtool and carries every source") {
  Status status;
  const std::string text = RenderNodeMetrics(FullSnapshot(), &status);
  INFO(text);
  REQUIRE(status.ok());
  const auto check = testing::PromtoolCheckMetrics(text);
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(check.output.empty());

  CHECK(Has(text, "shardkv_build_info{version=\"0.9.0\"} 1"));
  CHECK(Has(text, "shardkv_ready 1"));
  CHECK(Has(text, "shardkv_requests_total{op=\"get\",result=\"unavailable\"} 2"));
  CHECK(Has(text, "shardkv_request_duration_seconds_bucket{op=\"get\",le=\"0.0001\"} 1"));
  CHECK(Has(text, "shardkv_request_duration_seconds_bucket{op=\"get\",le=\"0.001\"} 3"));
  CHECK(Has(text, "shardkv_request_duration_seconds_count{op=\"get\"} 4"));
  CHECK(Has(text, "shardkv_request_duration_seconds_sum{op=\"get\"} 0.0311"));
  CHECK(Has(text, "shardkv_rocksdb_running_compactions 1"));
  CHECK(Has(text, "shardkv_rocksdb_pending_compaction_bytes 4096"));
  CHECK(Has(text, "shardkv_rocksdb_compactions_total 4"));
  CHECK(Has(text, "shardkv_rocksdb_compaction_written_bytes_total 536870912"));
  CHECK(Has(text, "shardkv_rocksdb_write_stops_total 2"));
  CHECK(Has(text, "shardkv_change_state{state=\"streaming\"} 1"));
  CHECK(Has(text, "shardkv_change_state{state=\"done\"} 0"));
  CHECK(Has(text, "shardkv_change_info{change_id=\"77\"} 1"));
  CHECK(Has(text, "shardkv_change_planned_copies 1000"));
  CHECK(Has(text, "shardkv_change_planned_bytes 64000"));
  CHECK(Has(text, "shardkv_change_moved_copies 10"));
  CHECK(Has(text, "shardkv_change_stream_rate_limit_bytes_per_second 1048576"));
  CHECK(Has(text, "shardkv_change_client_errors 0"));
  CHECK(Has(text, "shardkv_change_start_time_seconds 1700000000.5"));
  // Every exported stat has its family and the snapshot's value.
  for (const StatExport& e : StatExports()) {
    INFO(e.stat);
    CHECK(text.find("# TYPE " + std::string(e.metric) + " ") != std::string::npos);
  }
  CHECK(Has(text, "shardkv_quorum_failures_total " +
                      std::to_string(FullSnapshot().counters.at("quorum_failures"))));
  CHECK(Has(text, "shardkv_hints_pending " +
                      std::to_string(FullSnapshot().counters.at("hints_pending"))));
}

TEST_CASE("node metrics: an empty snapshot (unformed node, closed store) is still valid") {
  NodeMetricsSnapshot s;
  s.version = "0.9.0";
  Status status;
  const std::string text = RenderNodeMetrics(s, &status);
  INFO(text);
  REQUIRE(status.ok());
  const auto check = testing::PromtoolCheckMetrics(text);
  INFO(check.output);
  CHECK(check.exit_code == 0);
  CHECK(Has(text, "shardkv_ready 0"));
  CHECK(text.find("shardkv_change_info{") == std::string::npos);  // no change, no sample
  CHECK(Has(text, "shardkv_change_state{state=\"planned\"} 0"));
  CHECK(text.find("shardkv_change_planned_copies") == std::string::npos);
}

TEST_CASE("node metrics: a 64-bit change id round-trips exactly through the exposition") {
  // Change ids are random 64-bit numbers (odd); a double holds 53 bits, so as a sample value
  // 2^53 + 1 and 2^64 - 1 would come back as other numbers.
  for (const uint64_t id : {(uint64_t{1} << 53) + 1, UINT64_MAX, uint64_t{0x8000000000000001}}) {
    NodeMetricsSnapshot s = FullSnapshot();
    s.change->change_id = id;
    Status status;
    const std::string text = RenderNodeMetrics(s, &status);
    REQUIRE(status.ok());
    const auto check = testing::PromtoolCheckMetrics(text);
    INFO(check.output);
    CHECK(check.exit_code == 0);
    CHECK(check.output.empty());
    const std::string prefix = "\nshardkv_change_info{change_id=\"";
    const size_t at = text.find(prefix);
    REQUIRE(at != std::string::npos);
    const size_t begin = at + prefix.size();
    const std::string label = text.substr(begin, text.find('"', begin) - begin);
    INFO(label);
    CHECK(std::stoull(label) == id);
    // What a gauge would have lost: the id and its neighbour are the same double.
    CHECK(static_cast<double>(id) == static_cast<double>(id - 1));
  }
}

TEST_CASE("node metrics: result labels are snake_case code names") {
  CHECK(ResultLabel(Status::Code::kOk) == "ok");
  CHECK(ResultLabel(Status::Code::kStaleEpoch) == "stale_epoch");
  CHECK(ResultLabel(Status::Code::kUnauthenticated) == "unauthenticated");
  for (int c = 0; c <= static_cast<int>(Status::Code::kUnauthenticated); ++c) {
    const std::string_view label = ResultLabel(static_cast<Status::Code>(c));
    CHECK(label != "unknown");
    CHECK(ExpositionWriter::ValidLabelName(label));
  }
}
