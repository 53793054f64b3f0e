// ExpositionWriter (src/metrics/exposition_writer.h): the Prometheus text format's details, one
// by one, and the misuses it refuses; Histogram's bucket rule (le is inclusive).
#include "metrics/exposition_writer.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "metrics/histogram.h"

using shardkv::metrics::ExpositionWriter;
using shardkv::metrics::Histogram;
using shardkv::metrics::HistogramSnapshot;
using shardkv::metrics::MetricType;

TEST_CASE("exposition: a counter family has HELP, TYPE and its samples") {
  ExpositionWriter w;
  w.Family("shardkv_requests_total", MetricType::kCounter, "Requests answered.");
  w.Sample({{"op", "get"}, {"result", "ok"}}, 3);
  w.Sample({{"op", "put"}, {"result", "unavailable"}}, 0);
  CHECK(w.status().ok());
  CHECK(w.text() ==
        "# HELP shardkv_requests_total Requests answered.\n"
        "# TYPE shardkv_requests_total counter\n"
        "shardkv_requests_total{op=\"get\",result=\"ok\"} 3\n"
        "shardkv_requests_total{op=\"put\",result=\"unavailable\"} 0\n");
}

TEST_CASE("exposition: label values and HELP text are escaped") {
  CHECK(ExpositionWriter::EscapeLabelValue("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
  CHECK(ExpositionWriter::EscapeHelp("a\\b\"c\nd") == "a\\\\b\"c\\nd");  // quotes stay in HELP
  ExpositionWriter w;
  w.Family("g", MetricType::kGauge, "line one\nline two");
  w.Sample({{"path", "C:\\x \"y\""}}, 1);
  CHECK(w.status().ok());
  CHECK(w.text() ==
        "# HELP g line one\\nline two\n# TYPE g gauge\n"
        "g{path=\"C:\\\\x \\\"y\\\"\"} 1\n");
}

TEST_CASE("exposition: values use the shortest round-trip form and Prometheus's infinities") {
  CHECK(ExpositionWriter::FormatValue(0) == "0");
  CHECK(ExpositionWriter::FormatValue(42) == "42");
  CHECK(ExpositionWriter::FormatValue(-3) == "-3");
  CHECK(ExpositionWriter::FormatValue(0.25) == "0.25");
  CHECK(ExpositionWriter::FormatValue(0.0001) == "0.0001");
  CHECK(ExpositionWriter::FormatValue(1e21) == "1e+21");
  CHECK(ExpositionWriter::FormatValue(9007199254740993.0) == "9007199254740992");
  CHECK(ExpositionWriter::FormatValue(std::numeric_limits<double>::infinity()) == "+Inf");
  CHECK(ExpositionWriter::FormatValue(-std::numeric_limits<double>::infinity()) == "-Inf");
  CHECK(ExpositionWriter::FormatValue(std::nan("")) == "NaN");
  // Round trip: what it writes parses back to the same double.
  for (double v : {0.1, 1.0 / 3, 123456.789, 2.5e-7, 1.7976931348623157e308}) {
    CHECK(std::stod(ExpositionWriter::FormatValue(v)) == v);
  }
}

TEST_CASE("exposition: a histogram writes cumulative buckets ending in +Inf, _sum and _count") {
  ExpositionWriter w;
  w.Family("shardkv_request_duration_seconds", MetricType::kHistogram, "Latency.");
  HistogramSnapshot h;
  h.upper_bounds = {0.001, 0.01};
  h.counts = {2, 3, 1};
  h.sum = 0.0425;
  w.Histogram({{"op", "get"}}, h);
  CHECK(w.status().ok());
  CHECK(w.text() ==
        "# HELP shardkv_request_duration_seconds Latency.\n"
        "# TYPE shardkv_request_duration_seconds histogram\n"
        "shardkv_request_duration_seconds_bucket{op=\"get\",le=\"0.001\"} 2\n"
        "shardkv_request_duration_seconds_bucket{op=\"get\",le=\"0.01\"} 5\n"
        "shardkv_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 6\n"
        "shardkv_request_duration_seconds_sum{op=\"get\"} 0.0425\n"
        "shardkv_request_duration_seconds_count{op=\"get\"} 6\n");
}

TEST_CASE("exposition: misuses are recorded and their lines left out") {
  SECTION("a counter without _total") {
    ExpositionWriter w;
    w.Family("shardkv_requests", MetricType::kCounter, "x");
    w.Sample(1);
    CHECK(w.status().IsInvalidArgument());
    CHECK(w.text().empty());
  }
  SECTION("a gauge ending in _total") {
    ExpositionWriter w;
    w.Family("shardkv_open_total", MetricType::kGauge, "x");
    CHECK(w.status().IsInvalidArgument());
  }
  SECTION("a family written twice") {
    ExpositionWriter w;
    w.Family("a", MetricType::kGauge, "x");
    w.Sample(1);
    w.Family("a", MetricType::kGauge, "x");
    w.Sample(2);
    CHECK(w.status().IsInvalidArgument());
    CHECK(w.text() == "# HELP a x\n# TYPE a gauge\na 1\n");
  }
  SECTION("bad names") {
    CHECK_FALSE(ExpositionWriter::ValidMetricName(""));
    CHECK_FALSE(ExpositionWriter::ValidMetricName("1abc"));
    CHECK_FALSE(ExpositionWriter::ValidMetricName("a-b"));
    CHECK(ExpositionWriter::ValidMetricName("a:b_c9"));
    CHECK_FALSE(ExpositionWriter::ValidLabelName("__name"));
    CHECK_FALSE(ExpositionWriter::ValidLabelName("a:b"));
    CHECK(ExpositionWriter::ValidLabelName("_op1"));
    ExpositionWriter w;
    w.Family("g", MetricType::kGauge, "x");
    w.Sample({{"bad-label", "v"}}, 1);
    CHECK(w.status().IsInvalidArgument());
    CHECK(w.text() == "# HELP g x\n# TYPE g gauge\n");
  }
  SECTION("a repeated label, and le on a histogram") {
    ExpositionWriter w;
    w.Family("g", MetricType::kGauge, "x");
    w.Sample({{"a", "1"}, {"a", "2"}}, 1);
    CHECK(w.status().IsInvalidArgument());
    ExpositionWriter h;
    h.Family("h", MetricType::kHistogram, "x");
    h.Histogram({{"le", "1"}}, HistogramSnapshot{{}, {1}, 0});
    CHECK(h.status().IsInvalidArgument());
  }
  SECTION("a sample outside a family, or of the wrong kind") {
    ExpositionWriter w;
    w.Sample(1);
    CHECK(w.status().IsInvalidArgument());
    ExpositionWriter h;
    h.Family("h", MetricType::kHistogram, "x");
    h.Sample(1);
    CHECK(h.status().IsInvalidArgument());
  }
  SECTION("a negative or NaN counter") {
    ExpositionWriter w;
    w.Family("c_total", MetricType::kCounter, "x");
    w.Sample(-1);
    CHECK(w.status().IsInvalidArgument());
    CHECK(w.text() == "# HELP c_total x\n# TYPE c_total counter\n");
  }
  SECTION("histogram bounds that do not increase, or counts of the wrong size") {
    ExpositionWriter w;
    w.Family("h", MetricType::kHistogram, "x");
    w.Histogram({}, HistogramSnapshot{{1, 1}, {0, 0, 0}, 0});
    CHECK(w.status().IsInvalidArgument());
    ExpositionWriter v;
    v.Family("h", MetricType::kHistogram, "x");
    v.Histogram({}, HistogramSnapshot{{1}, {0}, 0});
    CHECK(v.status().IsInvalidArgument());
  }
}

TEST_CASE("histogram: a sample equal to a bound falls in that bucket (le is inclusive)") {
  Histogram h;
  h.Record(0);
  h.Record(100);       // the first bound: 100 us
  h.Record(101);       // the second
  h.Record(20000000);  // above the last bound (10 s): +Inf
  const HistogramSnapshot s = h.Snapshot();
  REQUIRE(s.upper_bounds.size() == Histogram::kBoundsMicros.size());
  REQUIRE(s.counts.size() == s.upper_bounds.size() + 1);
  CHECK(s.upper_bounds.front() == 0.0001);
  CHECK(s.upper_bounds.back() == 10.0);
  CHECK(s.counts[0] == 2);
  CHECK(s.counts[1] == 1);
  CHECK(s.counts.back() == 1);
  CHECK(h.Count() == 4);
  CHECK(s.sum == Approx(20.000201));
}
