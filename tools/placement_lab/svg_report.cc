#include "placement_lab/svg_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>
#include <string_view>

#include "placement_lab/report_format.h"
#include "shardkv/hash_ring.h"

namespace shardkv::lab {
namespace {

constexpr double kWidth = 960;
constexpr int kPanelColumns = 3;
constexpr double kPanelWidth = kWidth / kPanelColumns;
constexpr double kPanelHeight = 210;
// A ring with more arcs than this would make a multi-megabyte SVG that no one can read anyway.
constexpr size_t kMaxRingArcs = 20000;

// Tableau 10: distinguishable colours, cycled when there are more nodes.
constexpr std::string_view kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr std::string_view kMoveColors[] = {"#4e79a7", "#f28e2b", "#e15759"};

std::string_view Color(size_t i) { return kPalette[i % std::size(kPalette)]; }

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Smallest 1, 2 or 5 times a power of ten that is >= v: a scale a reader can read.
double NiceCeil(double v) {
  if (!(v > 0)) return 1;
  double p = std::pow(10, std::floor(std::log10(v)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= v * (1 - 1e-9)) return m * p;
  }
  return 10 * p;
}

std::string Num(double v) {
  std::string s = fmt::format("{:.2f}", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

std::string Text(double x, double y, std::string_view text, std::string_view attrs = "") {
  return fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" {}>{}</text>\n", x, y, attrs, Escape(text));
}

std::string Line(double x1, double y1, double x2, double y2, std::string_view attrs) {
  return fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" {}/>\n", x1, y1,
                     x2, y2, attrs);
}

std::string Rect(double x, double y, double w, double h, std::string_view fill,
                 std::string_view title = "") {
  std::string r =
      fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"",
                  x, y, std::max(w, 0.0), std::max(h, 0.0), fill);
  if (title.empty()) return r + "/>\n";
  return r + "><title>" + Escape(title) + "</title></rect>\n";
}

// One small bar chart: the share of each node, a dashed tick at each node's ideal.
std::string SharePanel(const CompareReport& report, const ConfigResult& r, double x0, double y0) {
  const std::vector<NodeSpec>& nodes = report.membership.nodes;
  const ShareStats& s = r.shares;
  const double left = x0 + 52, right = x0 + kPanelWidth - 12;
  const double top = y0 + 30, bottom = y0 + kPanelHeight - 42;
  double max_v = s.max_share_pct;
  for (double ideal : s.ideal_pct) max_v = std::max(max_v, ideal * 1.5);
  const double y_max = NiceCeil(max_v);
  auto y_of = [&](double v) { return bottom - (bottom - top) * v / y_max; };

  std::string out;
  out += Text((left + right) / 2, y0 + 14, r.config.Label(),
              "text-anchor=\"middle\" font-weight=\"bold\"");
  out += Text((left + right) / 2, y0 + 26,
              fmt::format("max dev {:.2f} pp, stddev {:.2f} pp", s.max_dev_pp, s.stddev_pp),
              "text-anchor=\"middle\" font-size=\"10\" fill=\"#555\"");
  for (int t = 0; t <= 4; ++t) {
    double v = y_max * t / 4, y = y_of(v);
    out += Line(left, y, right, y, "stroke=\"#e5e5e5\"");
    out += Text(left - 4, y + 3, Num(v), "text-anchor=\"end\" font-size=\"9\"");
  }
  const double slot = (right - left) / static_cast<double>(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    double x = left + slot * static_cast<double>(i);
    double bar = std::max(slot * 0.7, 0.5);
    out += Rect(
        x + (slot - bar) / 2, y_of(s.shares_pct[i]), bar, bottom - y_of(s.shares_pct[i]), Color(i),
        fmt::format("{}: {:.2f}% (ideal {:.2f}%)", nodes[i].name, s.shares_pct[i], s.ideal_pct[i]));
    double yi = y_of(s.ideal_pct[i]);
    out += Line(x, yi, x + slot, yi, "stroke=\"#000\" stroke-dasharray=\"3,2\"");
  }
  // Node ticks: every node when they fit, else about ten evenly spaced indexes.
  size_t step = nodes.size() <= 12 ? 1 : (nodes.size() + 9) / 10;
  for (size_t i = 0; i < nodes.size(); i += step) {
    double x = left + slot * (static_cast<double>(i) + 0.5);
    out += Text(x, bottom + 10, std::to_string(i), "text-anchor=\"middle\" font-size=\"9\"");
  }
  out += Line(left, top, left, bottom, "stroke=\"#000\"");
  out += Line(left, bottom, right, bottom, "stroke=\"#000\"");
  out += Text((left + right) / 2, bottom + 24, "node index (see legend)",
              "text-anchor=\"middle\" font-size=\"10\"");
  out += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" transform=\"rotate(-90 {0:.1f} {1:.1f})\" "
      "text-anchor=\"middle\" font-size=\"10\">share of keys (%)</text>\n",
      x0 + 14, (top + bottom) / 2);
  return out;
}

std::string ShareSection(const CompareReport& report, double y0, double* height) {
  const size_t n = report.results.size();
  const size_t rows = (n + kPanelColumns - 1) / kPanelColumns;
  std::string out =
      Text(10, y0 + 18, "1. Share of keys per node (bars) against each node's ideal (dashes)",
           "font-size=\"15\" font-weight=\"bold\"");
  for (size_t i = 0; i < n; ++i) {
    out +=
        SharePanel(report, report.results[i], kPanelWidth * static_cast<double>(i % kPanelColumns),
                   y0 + 28 + kPanelHeight * static_cast<double>(i / kPanelColumns));
  }
  // Legend: node index -> name (the panels are too small for names).
  const std::vector<NodeSpec>& nodes = report.membership.nodes;
  double y = y0 + 28 + kPanelHeight * static_cast<double>(rows) + 6;
  size_t shown = std::min<size_t>(nodes.size(), 40);
  for (size_t i = 0; i < shown; ++i) {
    double x = 10 + 118 * static_cast<double>(i % 8);
    double yy = y + 16 * static_cast<double>(i / 8);
    out += Rect(x, yy, 10, 10, Color(i));
    out += Text(x + 14, yy + 9, fmt::format("{} {}", i, nodes[i].name), "font-size=\"10\"");
  }
  double legend_rows = std::ceil(static_cast<double>(shown) / 8);
  if (shown < nodes.size()) {
    out += Text(10, y + 16 * legend_rows + 9,
                fmt::format("... and {} more nodes", nodes.size() - shown), "font-size=\"10\"");
    legend_rows += 1;
  }
  *height = 28 + kPanelHeight * static_cast<double>(rows) + 6 + 16 * legend_rows + 10;
  return out;
}

std::string MoveSection(const CompareReport& report, double y0, double* height) {
  const double label_w = 170, left = label_w + 10, right = kWidth - 30;
  const double bar_h = 9, group_h = 3 * bar_h + 10;
  const double top = y0 + 52;
  const double bottom = top + group_h * static_cast<double>(report.results.size());
  double max_v = 0;
  for (const ConfigResult& r : report.results) {
    for (const Movement* m : {&r.add, &r.remove_last, &r.remove_middle}) {
      if (!std::isnan(m->moved_pct)) max_v = std::max({max_v, m->moved_pct, m->ideal_pct});
    }
  }
  const double x_max = std::min(100.0, NiceCeil(max_v * 1.05));
  auto x_of = [&](double v) { return left + (right - left) * v / x_max; };

  std::string out = Text(10, y0 + 18,
                         "2. Keys moved by a membership change (bars) against the ideal (black "
                         "ticks)",
                         "font-size=\"15\" font-weight=\"bold\"");
  const char* names[] = {"add one node", "remove the last node", "remove a middle node"};
  for (int k = 0; k < 3; ++k) {
    double x = left + 160 * k;
    out += Rect(x, y0 + 28, 12, 10, kMoveColors[k]);
    out += Text(x + 16, y0 + 37, names[k], "font-size=\"11\"");
  }
  out +=
      Line(left + 490 + 6, y0 + 26, left + 490 + 6, y0 + 40, "stroke=\"#000\" stroke-width=\"2\"");
  out += Text(left + 490 + 16, y0 + 37, "ideal: the share of the node that joins or leaves",
              "font-size=\"11\"");
  for (int t = 0; t <= 5; ++t) {
    double v = x_max * t / 5, x = x_of(v);
    out += Line(x, top, x, bottom, "stroke=\"#e5e5e5\"");
    out += Text(x, bottom + 13, Num(v), "text-anchor=\"middle\" font-size=\"10\"");
  }
  for (size_t i = 0; i < report.results.size(); ++i) {
    const ConfigResult& r = report.results[i];
    double gy = top + group_h * static_cast<double>(i) + 5;
    out += Text(label_w, gy + 1.5 * bar_h + 4, r.config.Label(),
                "text-anchor=\"end\" font-size=\"11\"");
    const Movement* moves[] = {&r.add, &r.remove_last, &r.remove_middle};
    for (int k = 0; k < 3; ++k) {
      const Movement& m = *moves[k];
      double y = gy + bar_h * k;
      if (std::isnan(m.moved_pct)) {
        out += Text(left + 4, y + bar_h - 1, "n/a (one node)", "font-size=\"9\"");
        continue;
      }
      out += Rect(left, y, x_of(std::min(m.moved_pct, x_max)) - left, bar_h - 1, kMoveColors[k],
                  fmt::format("{}: {} moved {:.2f}% (ideal {:.2f}%)", r.config.Label(), names[k],
                              m.moved_pct, m.ideal_pct));
      out += Line(x_of(m.ideal_pct), y - 1, x_of(m.ideal_pct), y + bar_h,
                  "stroke=\"#000\" stroke-width=\"2\"");
      // The label goes past both the bar and the tick, so neither hides it.
      out += Text(std::max(x_of(std::min(m.moved_pct, x_max)), x_of(m.ideal_pct) + 1) + 4,
                  y + bar_h - 1, fmt::format("{:.2f}", m.moved_pct), "font-size=\"9\"");
    }
  }
  out += Line(left, top, left, bottom, "stroke=\"#000\"");
  out += Line(left, bottom, right, bottom, "stroke=\"#000\"");
  out += Text((left + right) / 2, bottom + 30, "% of keys moved",
              "text-anchor=\"middle\" font-size=\"11\"");
  *height = bottom + 44 - y0;
  return out;
}

// One ring, centred at (cx, cy): every arc in its owner's colour.
std::string RingPicture(const CompareReport& report, const ConfigResult& r, double cx, double cy,
                        double radius) {
  StatusOr<std::unique_ptr<HashRing>> ring =
      HashRing::Build(report.membership.nodes, r.config.vnodes, r.config.hash);
  if (!ring.ok()) return "";
  std::vector<HashRing::Arc> arcs = (*ring)->Ranges();
  std::string out =
      Text(cx, cy - radius - 34, r.config.Label(), "text-anchor=\"middle\" font-weight=\"bold\"");
  if (arcs.size() > kMaxRingArcs) {
    return out + Text(cx, cy, fmt::format("{} arcs: too many to draw", arcs.size()),
                      "text-anchor=\"middle\" font-size=\"11\"");
  }
  auto angle = [](uint64_t token) {
    // Token 0 at the top, clockwise, as rings are usually drawn.
    return 2 * std::numbers::pi * (static_cast<double>(token) / 18446744073709551616.0) -
           std::numbers::pi / 2;
  };
  for (const HashRing::Arc& a : arcs) {
    double a0 = angle(a.range.first), a1 = angle(a.range.last);
    double large = (a1 - a0) > std::numbers::pi ? 1 : 0;
    out += fmt::format(
        "<path d=\"M {:.2f} {:.2f} A {:.0f} {:.0f} 0 {:.0f} 1 {:.2f} {:.2f}\" fill=\"none\" "
        "stroke=\"{}\" stroke-width=\"26\"/>\n",
        cx + radius * std::cos(a0), cy + radius * std::sin(a0), radius, radius, large,
        cx + radius * std::cos(a1), cy + radius * std::sin(a1), Color(a.owner));
  }
  out += Text(cx, cy - radius - 17, "0", "text-anchor=\"middle\" font-size=\"10\"");
  out += Text(cx + radius + 17, cy + 4, "2^62", "font-size=\"10\"");
  out += Text(cx, cy + radius + 25, "2^63", "text-anchor=\"middle\" font-size=\"10\"");
  out += Text(cx - radius - 17, cy + 4, "3*2^62", "text-anchor=\"end\" font-size=\"10\"");
  out += Text(cx, cy - 2, fmt::format("{} points", (*ring)->point_count()),
              "text-anchor=\"middle\" font-size=\"11\"");
  if (!std::isnan(r.vnode_adjacency_pct)) {
    out += Text(cx, cy + 13, fmt::format("adjacent same node {:.1f}%", r.vnode_adjacency_pct),
                "text-anchor=\"middle\" font-size=\"10\" fill=\"#555\"");
  }
  return out;
}

// The first few ring configurations side by side, so a clustering hash stands out next to a
// good one.
std::string RingSection(const CompareReport& report, double y0, double* height) {
  *height = 0;
  std::vector<const ConfigResult*> rings;
  for (const ConfigResult& r : report.results) {
    if (r.config.algorithm == Algorithm::kRing && rings.size() < kPanelColumns) rings.push_back(&r);
  }
  if (rings.empty()) return "";
  const double radius = 95;
  std::string out = Text(10, y0 + 18,
                         "3. The ring: each arc (token range) in its owner's colour; long runs of "
                         "one colour = clustered vnodes",
                         "font-size=\"15\" font-weight=\"bold\"");
  for (size_t i = 0; i < rings.size(); ++i) {
    double cx = kPanelWidth * (static_cast<double>(i) + 0.5);
    out += RingPicture(report, *rings[i], cx, y0 + 80 + radius, radius);
  }
  out += Text(10, y0 + 80 + 2 * radius + 50,
              "Tokens run clockwise from 0 at the top; colours as in the legend of chart 1.",
              "font-size=\"11\" fill=\"#444\"");
  *height = 80 + 2 * radius + 60;
  return out;
}

}  // namespace

std::string RenderSvg(const CompareReport& report) {
  std::string body;
  double y = 0;
  const LabMembership& m = report.membership;
  body += Text(10, 22, "shardkv placement compare", "font-size=\"18\" font-weight=\"bold\"");
  body += Text(
      10, 40,
      fmt::format("{}; {}; added node {}", report.keys_description, m.description, m.added.name),
      "font-size=\"12\" fill=\"#444\"");
  y = 54;
  double h = 0;
  body += ShareSection(report, y, &h);
  y += h + 10;
  body += MoveSection(report, y, &h);
  y += h + 10;
  body += RingSection(report, y, &h);
  y += h + 10;
  return fmt::format(
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
             "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"sans-serif\" font-size=\"12\">\n"
             "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n",
             kWidth, y) +
         body + "</svg>\n";
}

Status WriteSvgFile(const CompareReport& report, const std::string& path) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return Status::IOError("cannot write --svg file '" + path + "': " + std::strerror(errno));
  }
  out << RenderSvg(report);
  out.close();
  if (!out) return Status::IOError("error writing --svg file '" + path + "'");
  return Status::OK();
}

}  // namespace shardkv::lab
