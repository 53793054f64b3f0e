// Renders a CompareReport as a self-contained SVG document (hand-written, no dependencies):
//   1. shares per node, one small bar chart per configuration, with each node's ideal share;
//   2. keys moved on add / remove-last / remove-middle per configuration, with the ideal marked;
//   3. for the first ring configuration, the ring itself: every arc coloured by its owner (the
//      seeds' figure 2-1), which shows at a glance whether a node's vnodes cluster.
// Every chart has labelled axes with tick values.
#pragma once

#include <string>

#include "placement_lab/comparison.h"
#include "shardkv/status.h"

namespace shardkv::lab {

std::string RenderSvg(const CompareReport& report);

// Writes RenderSvg(report) to `path`. Errors: the file cannot be written.
Status WriteSvgFile(const CompareReport& report, const std::string& path);

}  // namespace shardkv::lab
