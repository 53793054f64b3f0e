#include <catch2/catch.hpp>
#include <sstream>

#include "lab/json_value.h"
#include "placement_lab/comparison.h"
#include "placement_lab/report_format.h"
#include "placement_lab/svg_report.h"

using namespace shardkv;
using namespace shardkv::lab;
using shardkv::testing::JsonValue;
using shardkv::testing::ParseJson;

namespace {

// A small report with every algorithm; node names that need escaping in JSON, CSV and SVG.
CompareReport SmallReport(int nodes = 4) {
  MembershipSpec ms;
  ms.names = "n\"<&>,%d";
  ms.count = nodes;
  auto m = LabMembership::Build(ms);
  REQUIRE(m.ok());
  KeySpec ks;
  ks.count = 5000;
  auto keys = KeySet::Generate(ks);
  REQUIRE(keys.ok());
  CompareOptions o;
  o.vnodes = {10, 100};
  auto report = RunComparison(o, *m, *keys);
  REQUIRE(report.ok());
  return std::move(report).value();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

const std::vector<std::string> kFieldNames = {"algorithm",
                                              "hash",
                                              "vnodes",
                                              "min_share_pct",
                                              "max_share_pct",
                                              "max_dev_pp",
                                              "stddev_pp",
                                              "add_moved_pct",
                                              "add_ideal_pct",
                                              "added_node_share_pct",
                                              "remove_last_moved_pct",
                                              "remove_last_ideal_pct",
                                              "remove_middle_moved_pct",
                                              "remove_middle_ideal_pct",
                                              "vnode_adjacency_pct",
                                              "lookup_ns",
                                              "hash_ns",
                                              "owner_ns",
                                              "build_us",
                                              "memory_bytes"};

}  // namespace

TEST_CASE("json: valid, one object per configuration, documented fields", "[lab][report]") {
  CompareReport report = SmallReport();
  auto doc = ParseJson(FormatJson(report));
  REQUIRE(doc.has_value());
  REQUIRE(doc->type == JsonValue::Type::kObject);
  CHECK(doc->Find("keys")->number == 5000);
  const JsonValue* nodes = doc->Find("nodes");
  REQUIRE(nodes != nullptr);
  REQUIRE(nodes->array.size() == 4);
  CHECK(nodes->array[0].Find("name")->string == "n\"<&>,0");  // escaped and read back
  CHECK(nodes->array[0].Find("weight")->number == 1);
  CHECK(doc->Find("added_node")->Find("name")->string == "n\"<&>,4");
  CHECK(doc->Find("maglev_table_size")->number == 65537);

  const JsonValue* results = doc->Find("results");
  REQUIRE(results != nullptr);
  REQUIRE(results->array.size() == 7);  // ring x 2 vnodes + 5 others
  for (const JsonValue& r : results->array) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : r.object) keys.push_back(k);
    std::vector<std::string> expected = kFieldNames;
    expected.push_back("shares_pct");
    CHECK(keys == expected);
    CHECK(r.Find("shares_pct")->array.size() == 4);
    bool ring = r.Find("algorithm")->string == "ring";
    CHECK(r.Find("vnodes")->is_null() == !ring);
    CHECK(r.Find("vnode_adjacency_pct")->is_null() == !ring);
    CHECK(r.Find("add_ideal_pct")->number == Approx(20).margin(1e-3));
  }
  CHECK(results->array[0].Find("vnodes")->number == 10);
  CHECK(results->array[5].Find("hash")->string == "md5");  // ketama
}

TEST_CASE("json: a movement that cannot be measured is null", "[lab][report]") {
  CompareReport report = SmallReport(1);
  auto doc = ParseJson(FormatJson(report));
  REQUIRE(doc.has_value());
  const JsonValue& first = doc->Find("results")->array[0];
  CHECK(first.Find("remove_last_moved_pct")->is_null());
  CHECK(first.Find("remove_middle_ideal_pct")->is_null());
  CHECK_FALSE(first.Find("add_moved_pct")->is_null());
}

TEST_CASE("csv: header = the JSON fields, one row per configuration", "[lab][report]") {
  CompareReport report = SmallReport();
  std::vector<std::string> lines = Lines(FormatCsv(report));
  REQUIRE(lines.size() == 1 + report.results.size());
  std::string header;
  for (size_t i = 0; i < kFieldNames.size(); ++i) header += (i ? "," : "") + kFieldNames[i];
  CHECK(lines[0] == header);
  for (size_t i = 1; i < lines.size(); ++i) {
    CHECK(std::count(lines[i].begin(), lines[i].end(), ',') ==
          static_cast<long>(kFieldNames.size() - 1));
  }
  CHECK(lines[1].rfind("ring,xxh3,10,", 0) == 0);
  CHECK(lines[3].rfind("jump,xxh3,,", 0) == 0);          // no vnodes: empty cell
  CHECK(Lines(FormatCsv(CompareReport{})).size() == 1);  // header even with no rows
}

TEST_CASE("text: an aligned table with every configuration", "[lab][report]") {
  CompareReport report = SmallReport();
  std::vector<std::string> lines = Lines(FormatText(report));
  // Three header lines, a blank line, the column header, one row per configuration.
  REQUIRE(lines.size() == 5 + report.results.size());
  CHECK(lines[0].find("5000 keys (user:%d, 0..4999)") != std::string::npos);
  const std::string& columns = lines[4];
  for (const char* c : {"algorithm", "min%", "maxdev pp", "stddev pp", "add% (ideal)",
                        "rm-last% (ideal)", "rm-mid% (ideal)", "ns/key", "build", "memory"}) {
    CHECK(columns.find(c) != std::string::npos);
  }
  // Right-aligned numeric columns end at the same place in every row.
  size_t end = columns.find("maxdev pp") + std::string("maxdev pp").size();
  for (size_t i = 5; i < lines.size(); ++i) {
    INFO(lines[i]);
    CHECK(lines[i][end - 1] != ' ');
    CHECK(lines[i][end] == ' ');
  }
  CHECK(lines[5].rfind("ring", 0) == 0);
  CHECK(lines.back().rfind("modulo", 0) == 0);
}

TEST_CASE("svg: one document with labelled axes, escaped text", "[lab][report]") {
  CompareReport report = SmallReport();
  std::string svg = RenderSvg(report);
  CHECK(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0) == 0);
  CHECK(svg.size() > 1000);
  CHECK(svg.substr(svg.size() - 7) == "</svg>\n");
  for (const char* label : {"share of keys (%)", "% of keys moved", "node index", "add one node",
                            "remove a middle node", "The ring: each arc"}) {
    CHECK(svg.find(label) != std::string::npos);
  }
  CHECK(svg.find("n&quot;&lt;&amp;&gt;,0") != std::string::npos);
  CHECK(svg.find("n\"<&>") == std::string::npos);
  // Every opened element is closed: count tags roughly.
  auto count = [&](const std::string& s) {
    size_t n = 0;
    for (size_t p = svg.find(s); p != std::string::npos; p = svg.find(s, p + 1)) ++n;
    return n;
  };
  CHECK(count("<text") == count("</text>"));
  CHECK(count("<svg") == count("</svg>"));
  CHECK_FALSE(WriteSvgFile(report, "/nonexistent/dir/x.svg").ok());
}
