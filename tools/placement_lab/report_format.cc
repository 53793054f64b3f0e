#include "placement_lab/report_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <vector>

#include "placement_lab/json.h"

namespace shardkv::lab {
namespace {

std::string Pct(double v) { return std::isnan(v) ? "-" : fmt::format("{:.2f}", v); }

// "9.03 (9.09)": a movement beside its ideal, as the issue asks.
std::string MoveCell(const Movement& m) {
  if (std::isnan(m.moved_pct)) return "n/a";
  return fmt::format("{:.2f} ({:.2f})", m.moved_pct, m.ideal_pct);
}

std::string JsonNumber(double v, int precision) {
  if (!std::isfinite(v)) return "null";
  return fmt::format("{:.{}f}", v, precision);
}

// Shortest round-trip form: weights are user input, so print them as given ("1", "2.5").
std::string JsonWeight(double w) { return std::isfinite(w) ? fmt::format("{}", w) : "null"; }

std::string JsonString(std::string_view s) { return JsonQuote(s); }

// RFC 4180: quote a field only when it needs it.
std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// One flat record per configuration; the single source of the JSON keys and the CSV columns.
struct Field {
  std::string name;
  std::string json;  // already encoded
  std::string csv;
};

std::vector<Field> Fields(const ConfigResult& r) {
  auto num = [](std::string name, double v, int precision) {
    std::string j = JsonNumber(v, precision);
    return Field{std::move(name), j, j == "null" ? "" : j};
  };
  auto str = [](std::string name, std::string_view v) {
    return Field{std::move(name), JsonString(v), CsvField(v)};
  };
  const ShareStats& s = r.shares;
  std::vector<Field> f;
  f.push_back(str("algorithm", AlgorithmName(r.config.algorithm)));
  f.push_back(str("hash", hash::HashKindName(r.config.hash)));
  f.push_back(r.config.algorithm == Algorithm::kRing ? num("vnodes", r.config.vnodes, 0)
                                                     : Field{"vnodes", "null", ""});
  f.push_back(num("min_share_pct", s.min_share_pct, 4));
  f.push_back(num("max_share_pct", s.max_share_pct, 4));
  f.push_back(num("max_dev_pp", s.max_dev_pp, 4));
  f.push_back(num("stddev_pp", s.stddev_pp, 4));
  f.push_back(num("add_moved_pct", r.add.moved_pct, 4));
  f.push_back(num("add_ideal_pct", r.add.ideal_pct, 4));
  f.push_back(num("added_node_share_pct", r.added_node_share_pct, 4));
  f.push_back(num("remove_last_moved_pct", r.remove_last.moved_pct, 4));
  f.push_back(num("remove_last_ideal_pct", r.remove_last.ideal_pct, 4));
  f.push_back(num("remove_middle_moved_pct", r.remove_middle.moved_pct, 4));
  f.push_back(num("remove_middle_ideal_pct", r.remove_middle.ideal_pct, 4));
  f.push_back(num("vnode_adjacency_pct", r.vnode_adjacency_pct, 2));
  f.push_back(num("lookup_ns", r.lookup_ns_per_key(), 2));
  f.push_back(num("hash_ns", r.hash_ns_per_key, 2));
  f.push_back(num("owner_ns", r.owner_ns_per_key, 2));
  f.push_back(num("build_us", r.build_us, 1));
  f.push_back(num("memory_bytes", static_cast<double>(r.memory_bytes), 0));
  return f;
}

}  // namespace

std::string FormatMicros(double us) {
  if (us < 1000) return fmt::format("{:.1f} us", us);
  if (us < 1e6) return fmt::format("{:.2f} ms", us / 1e3);
  return fmt::format("{:.2f} s", us / 1e6);
}

std::string FormatBytes(size_t bytes) {
  double b = static_cast<double>(bytes);
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (b < 1024.0 * 1024) return fmt::format("{:.1f} KiB", b / 1024);
  return fmt::format("{:.1f} MiB", b / (1024.0 * 1024));
}

std::string FormatText(const CompareReport& report) {
  const LabMembership& m = report.membership;
  std::string out =
      fmt::format("placement compare: {}, {}", report.keys_description, m.description);
  if (m.weighted) out += " (weighted)";
  out += fmt::format("; added node {}\n", m.added.name);
  if (!m.weighted && !m.nodes.empty()) {
    out += fmt::format("ideal share {:.2f}%; ", 100.0 / static_cast<double>(m.nodes.size()));
  }
  if (m.nodes.size() >= 2) {
    out +=
        fmt::format("moves in % of keys, ideal in parentheses; removed: last = {}, middle = {}\n",
                    m.nodes.back().name, m.nodes[m.nodes.size() / 2].name);
  } else {
    out += "moves in % of keys, ideal in parentheses; removals: n/a with one node\n";
  }
  out += fmt::format(
      "adj% (ring): points whose successor is the same node; random placement gives ~1/N = "
      "{:.2f}%\n\n",
      100.0 / static_cast<double>(m.nodes.size()));

  std::vector<std::vector<std::string>> rows;
  rows.push_back({"algorithm", "hash", "vnodes", "min%", "max%", "maxdev pp", "stddev pp",
                  "add% (ideal)", "new node%", "rm-last% (ideal)", "rm-mid% (ideal)", "adj%",
                  "ns/key", "build", "memory"});
  for (const ConfigResult& r : report.results) {
    const ShareStats& s = r.shares;
    rows.push_back({std::string(AlgorithmName(r.config.algorithm)),
                    std::string(hash::HashKindName(r.config.hash)),
                    r.config.algorithm == Algorithm::kRing ? std::to_string(r.config.vnodes) : "-",
                    Pct(s.min_share_pct), Pct(s.max_share_pct), Pct(s.max_dev_pp), Pct(s.stddev_pp),
                    MoveCell(r.add), Pct(r.added_node_share_pct), MoveCell(r.remove_last),
                    MoveCell(r.remove_middle), Pct(r.vnode_adjacency_pct),
                    fmt::format("{:.1f}", r.lookup_ns_per_key()), FormatMicros(r.build_us),
                    FormatBytes(r.memory_bytes)});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      // Names left-aligned, numbers right-aligned so decimal points line up.
      bool left = c < 2;
      if (c > 0) line += "  ";
      line +=
          left ? fmt::format("{:<{}}", row[c], width[c]) : fmt::format("{:>{}}", row[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + '\n';
  }
  return out;
}

std::string FormatJson(const CompareReport& report) {
  const LabMembership& m = report.membership;
  std::string out = "{\n";
  out += fmt::format("  \"keys\": {},\n", report.key_count);
  out += fmt::format("  \"key_source\": {},\n", JsonString(report.keys_description));
  out += "  \"nodes\": [";
  for (size_t i = 0; i < m.nodes.size(); ++i) {
    out += fmt::format("{}{{\"name\": {}, \"weight\": {}}}", i ? ", " : "",
                       JsonString(m.nodes[i].name), JsonWeight(m.nodes[i].weight));
  }
  out += "],\n";
  out += fmt::format("  \"added_node\": {{\"name\": {}, \"weight\": {}}},\n",
                     JsonString(m.added.name), JsonWeight(m.added.weight));
  const bool removable = m.nodes.size() >= 2;
  out += fmt::format("  \"removed_last\": {},\n",
                     removable ? JsonString(m.nodes.back().name) : "null");
  out += fmt::format("  \"removed_middle\": {},\n",
                     removable ? JsonString(m.nodes[m.nodes.size() / 2].name) : "null");
  out += fmt::format("  \"maglev_table_size\": {},\n", report.maglev_table_size);
  out += "  \"results\": [";
  for (size_t i = 0; i < report.results.size(); ++i) {
    const ConfigResult& r = report.results[i];
    out += i ? ",\n    {" : "\n    {";
    for (const Field& f : Fields(r)) out += fmt::format("\"{}\": {}, ", f.name, f.json);
    out += "\"shares_pct\": [";
    for (size_t n = 0; n < r.shares.shares_pct.size(); ++n) {
      out += (n ? ", " : "") + JsonNumber(r.shares.shares_pct[n], 4);
    }
    out += "]}";
  }
  out += report.results.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

std::string FormatCsv(const CompareReport& report) {
  std::string out;
  std::vector<Field> header = Fields(ConfigResult{});
  for (size_t i = 0; i < header.size(); ++i) out += (i ? "," : "") + header[i].name;
  out += '\n';
  for (const ConfigResult& r : report.results) {
    std::vector<Field> f = Fields(r);
    for (size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + f[i].csv;
    out += '\n';
  }
  return out;
}

}  // namespace shardkv::lab
