// shardkv-node's command line: the flags, and --config FILE (node_config.h) under them. The file
// is read first and the flags given on the command line override it, key by key; --id and
// --data are required unless the file sets id and data_dir.
//
// Thread-safety: a plain function of its arguments.
#pragma once

#include <string>

#include "node_config.h"
#include "shardkv/options.h"

namespace shardkv::node_tool {

struct NodeCommandLine {
  NodeOptions options;
  std::string log_level = "info";
  std::string config_path;  // empty: no --config
};

// How long shardkv-node lets a graceful stop take before it exits anyway (main.cc; the systemd
// unit's TimeoutStopSec is a little above it).
inline constexpr int kGracefulStopSeconds = 5;

// What ParseNodeCommandLine returns when the node should run; anything else is the exit status
// (0 after --help or --version printed their text, 2 for a usage error).
inline constexpr int kRunNode = -1;

// Parses argv into *out. For a usage error sets *error to one line (without "error: ") naming
// the flag, or the file, line and key, and returns 2. Does not validate the combination of
// options: the caller runs ValidateNodeOptions on the result.
int ParseNodeCommandLine(int argc, const char* const* argv, NodeCommandLine* out,
                         std::string* error);

}  // namespace shardkv::node_tool
