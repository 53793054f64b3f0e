// Renders a CompareReport as an aligned text table, JSON or CSV.
//
// The three carry the same per-configuration fields under the same names (JSON keys = CSV
// columns), so a script can switch formats without remapping. Percentages end in _pct,
// percentage points in _pp; a movement that cannot be measured (one node) is null in JSON and
// empty in CSV.
#pragma once

#include <string>

#include "placement_lab/comparison.h"

namespace shardkv::lab {

std::string FormatText(const CompareReport& report);
std::string FormatJson(const CompareReport& report);
std::string FormatCsv(const CompareReport& report);

// "12.3 us", "4.56 ms"; "512 B", "3.0 MiB": the units the text table and the SVG use.
std::string FormatMicros(double us);
std::string FormatBytes(size_t bytes);

}  // namespace shardkv::lab
