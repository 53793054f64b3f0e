#include "placement_lab/lab_membership.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "placement_lab/int_pattern.h"

namespace shardkv::lab {
namespace {

std::string FormatWeight(double w) {
  std::ostringstream out;
  out << w;
  return out.str();
}

// Reads up to `limit` + 1 names: the extra one, if present, becomes the added node.
StatusOr<std::vector<std::string>> ReadNames(const std::string& path, size_t limit) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Status::InvalidArgument("--node-names: '" + path + "' is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::IOError("--node-names: '" + path +
                           "' is not a pattern with one integer conversion (like cache-%02d) and "
                           "cannot be opened as a file: " +
                           std::strerror(errno));
  }
  std::vector<std::string> names;
  std::string line;
  while (names.size() < limit && std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) names.push_back(line);
  }
  if (in.bad()) return Status::IOError("error reading node name file '" + path + "'");
  return names;
}

}  // namespace

StatusOr<LabMembership> LabMembership::Build(const MembershipSpec& spec) {
  if (spec.count && (*spec.count < 1 || *spec.count > MembershipSpec::kMaxNodes)) {
    return Status::InvalidArgument("--nodes must be between 1 and " +
                                   std::to_string(MembershipSpec::kMaxNodes) + ", got " +
                                   std::to_string(*spec.count));
  }
  LabMembership m;
  if (spec.names.find('%') != std::string::npos) {
    StatusOr<IntPattern> pattern = IntPattern::Parse(spec.names);
    if (!pattern.ok()) return pattern.status().WithContext("--node-names");
    int n = spec.count.value_or(MembershipSpec::kDefaultNodes);
    for (int i = 0; i < n; ++i) m.nodes.push_back({pattern->Format(i), 1.0});
    m.added = {pattern->Format(n), spec.added_weight};
    m.description = std::to_string(n) + (n == 1 ? " node (" : " nodes (") + spec.names + ")";
  } else {
    size_t limit = spec.count ? static_cast<size_t>(*spec.count) : MembershipSpec::kMaxNodes;
    SHARDKV_ASSIGN_OR_RETURN(std::vector<std::string> names, ReadNames(spec.names, limit + 1));
    if (names.empty()) {
      return Status::InvalidArgument("node name file '" + spec.names + "' has no names");
    }
    size_t n = spec.count ? static_cast<size_t>(*spec.count) : names.size();
    if (names.size() < n) {
      return Status::InvalidArgument("--nodes " + std::to_string(n) + " but '" + spec.names +
                                     "' has only " + std::to_string(names.size()) + " names");
    }
    for (size_t i = 0; i < n; ++i) m.nodes.push_back({names[i], 1.0});
    std::string added = names.size() > n ? names[n] : "new-node";
    m.added = {added, spec.added_weight};
    m.description = std::to_string(n) + (n == 1 ? " node from " : " nodes from ") + spec.names;
  }

  if (!spec.weights.empty()) {
    if (spec.weights.size() != m.nodes.size()) {
      return Status::InvalidArgument("--weights has " + std::to_string(spec.weights.size()) +
                                     " values for " + std::to_string(m.nodes.size()) +
                                     " nodes; give one per node");
    }
    for (size_t i = 0; i < m.nodes.size(); ++i) {
      m.nodes[i].weight = spec.weights[i];
      if (spec.weights[i] != 1.0) m.weighted = true;
    }
  }
  if (spec.added_weight != 1.0) m.weighted = true;
  for (double w : spec.weights) {
    if (w > MembershipSpec::kMaxWeight) {
      return Status::InvalidArgument("--weights: a weight must be at most " +
                                     FormatWeight(MembershipSpec::kMaxWeight) + ", got " +
                                     FormatWeight(w));
    }
  }
  if (spec.added_weight > MembershipSpec::kMaxWeight) {
    return Status::InvalidArgument("--add-weight must be at most " +
                                   FormatWeight(MembershipSpec::kMaxWeight) + ", got " +
                                   FormatWeight(spec.added_weight));
  }
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(m.nodes).WithContext("nodes"));
  std::vector<NodeSpec> grown = m.nodes;
  grown.push_back(m.added);
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(grown).WithContext("added node"));
  return m;
}

}  // namespace shardkv::lab
