// ExpositionWriter: the Prometheus text exposition format, version 0.0.4 (what `GET /metrics`
// answers with Content-Type "text/plain; version=0.0.4").
//
// A scrape is a sequence of metric families, each written once: `# HELP`, `# TYPE`, then its
// samples. The writer owns the format's details so callers cannot get them wrong: escaping of
// HELP text (\\ and \n) and label values (\\, \" and \n), float formatting (shortest round-trip
// form, +Inf/-Inf/NaN), histogram series (_bucket{le=...} cumulative and ending in +Inf, _sum,
// _count), and the names' grammar. A misuse (a bad or repeated name, a sample outside its
// family, a counter without `_total`, a reserved label) does not throw: it is recorded in
// status() and the offending line is left out, so a bug in one family never breaks a scrape.
//
// Thread-safety: none (one writer per scrape).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

using Labels = std::vector<std::pair<std::string, std::string>>;

// A histogram's state: `counts[i]` samples fell at or below `upper_bounds[i]` and above the
// previous bound (not cumulative); counts has one more slot than upper_bounds, for +Inf.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;  // strictly increasing, finite
  std::vector<uint64_t> counts;
  double sum = 0;
};

class ExpositionWriter {
 public:
  // Starts a family: writes its # HELP and # TYPE lines. A counter's name must end in _total.
  void Family(std::string_view name, MetricType type, std::string_view help);
  // A sample of the current counter or gauge family.
  void Sample(const Labels& labels, double value);
  void Sample(double value) { Sample({}, value); }
  // The series of one histogram of the current histogram family.
  void Histogram(const Labels& labels, const HistogramSnapshot& h);

  // OK, or the first misuse (InvalidArgument); the text still holds every valid line.
  const Status& status() const { return status_; }
  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

  static std::string EscapeHelp(std::string_view help);
  static std::string EscapeLabelValue(std::string_view value);
  static std::string FormatValue(double value);
  // [a-zA-Z_:][a-zA-Z0-9_:]*
  static bool ValidMetricName(std::string_view name);
  // [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__" (reserved).
  static bool ValidLabelName(std::string_view name);

 private:
  void Fail(std::string message);
  bool CheckLabels(const Labels& labels);
  void Line(std::string_view name, const Labels& labels, std::string_view extra_name,
            std::string_view extra_value, double value);

  std::string out_;
  Status status_;
  std::set<std::string, std::less<>> families_;
  std::string family_;  // the current family's name ("" before the first)
  MetricType type_ = MetricType::kGauge;
};

}  // namespace shardkv::metrics
