#include "metrics/exposition_writer.h"

#include <charconv>
#include <cmath>

namespace shardkv::metrics {
namespace {

std::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool ExpositionWriter::ValidMetricName(std::string_view name) {
  if (name.empty() || !(IsAlpha(name[0]) || name[0] == ':')) return false;
  for (char c : name) {
    if (!IsAlpha(c) && !IsDigit(c) && c != ':') return false;
  }
  return true;
}

bool ExpositionWriter::ValidLabelName(std::string_view name) {
  if (name.empty() || !IsAlpha(name[0]) || name.substr(0, 2) == "__") return false;
  for (char c : name) {
    if (!IsAlpha(c) && !IsDigit(c)) return false;
  }
  return true;
}

std::string ExpositionWriter::EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string ExpositionWriter::EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string ExpositionWriter::FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // The shortest text that parses back to the same double (Go's ParseFloat, which Prometheus
  // uses, reads every form to_chars writes). Plain decimals in the usual range, so bucket
  // bounds read "0.0001" as in every exporter, not "1e-04"; exponents outside it ("1e+21").
  char buf[400];
  const double magnitude = std::fabs(value);
  const bool plain = magnitude == 0 || (magnitude >= 1e-6 && magnitude < 1e15);
  auto [end, ec] = plain ? std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "NaN";
  return std::string(buf, end);
}

void ExpositionWriter::Fail(std::string message) {
  if (status_.ok()) status_ = Status::InvalidArgument(std::move(message));
}

void ExpositionWriter::Family(std::string_view name, MetricType type, std::string_view help) {
  family_.clear();
  if (!ValidMetricName(name)) return Fail("invalid metric name \"" + std::string(name) + "\"");
  if (type == MetricType::kCounter && !EndsWith(name, "_total")) {
    return Fail("counter " + std::string(name) + " does not end in _total");
  }
  if (type != MetricType::kCounter && EndsWith(name, "_total")) {
    return Fail(std::string(name) + " ends in _total but is not a counter");
  }
  if (!families_.insert(std::string(name)).second) {
    return Fail("metric family " + std::string(name) + " written twice");
  }
  family_ = std::string(name);
  type_ = type;
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += TypeName(type);
  out_ += '\n';
}

bool ExpositionWriter::CheckLabels(const Labels& labels) {
  std::set<std::string_view> seen;
  for (const auto& [name, value] : labels) {
    if (!ValidLabelName(name)) {
      Fail("invalid label name \"" + name + "\" in " + family_);
      return false;
    }
    if (type_ == MetricType::kHistogram && name == "le") {
      Fail("label le is reserved for histogram buckets (" + family_ + ")");
      return false;
    }
    if (!seen.insert(name).second) {
      Fail("label " + name + " repeated in " + family_);
      return false;
    }
  }
  return true;
}

void ExpositionWriter::Line(std::string_view name, const Labels& labels,
                            std::string_view extra_name, std::string_view extra_value,
                            double value) {
  out_ += name;
  if (!labels.empty() || !extra_name.empty()) {
    out_ += '{';
    bool first = true;
    auto add = [&](std::string_view n, std::string_view v) {
      if (!first) out_ += ',';
      first = false;
      out_ += n;
      out_ += "=\"";
      out_ += EscapeLabelValue(v);
      out_ += '"';
    };
    for (const auto& [n, v] : labels) add(n, v);
    if (!extra_name.empty()) add(extra_name, extra_value);
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

void ExpositionWriter::Sample(const Labels& labels, double value) {
  if (family_.empty()) return Fail("sample outside a metric family");
  if (type_ == MetricType::kHistogram) {
    return Fail("plain sample in histogram family " + family_ + " (use Histogram)");
  }
  if (type_ == MetricType::kCounter && (std::isnan(value) || value < 0)) {
    return Fail("counter " + family_ + " given " + FormatValue(value));
  }
  if (!CheckLabels(labels)) return;
  Line(family_, labels, "", "", value);
}

void ExpositionWriter::Histogram(const Labels& labels, const HistogramSnapshot& h) {
  if (family_.empty()) return Fail("histogram outside a metric family");
  if (type_ != MetricType::kHistogram) return Fail(family_ + " is not a histogram family");
  if (h.counts.size() != h.upper_bounds.size() + 1) {
    return Fail("histogram " + family_ + " has " + std::to_string(h.counts.size()) +
                " counts for " + std::to_string(h.upper_bounds.size()) + " bounds");
  }
  for (size_t i = 0; i < h.upper_bounds.size(); ++i) {
    if (!std::isfinite(h.upper_bounds[i]) ||
        (i > 0 && h.upper_bounds[i] <= h.upper_bounds[i - 1])) {
      return Fail("histogram " + family_ + " bounds are not finite and increasing");
    }
  }
  if (!CheckLabels(labels)) return;
  const std::string bucket = family_ + "_bucket";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.counts.size(); ++i) {
    cumulative += h.counts[i];
    const std::string le = i < h.upper_bounds.size() ? FormatValue(h.upper_bounds[i]) : "+Inf";
    Line(bucket, labels, "le", le, static_cast<double>(cumulative));
  }
  Line(family_ + "_sum", labels, "", "", h.sum);
  Line(family_ + "_count", labels, "", "", static_cast<double>(cumulative));
}

}  // namespace shardkv::metrics
