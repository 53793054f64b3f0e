// shardkv-node's configuration file (`--config FILE`, TOML): every key sets the NodeOptions
// field its flag sets; a flag given on the command line overrides the file (node_flags.h).
//
//   id, cluster_id, listen, advertise, data_dir, seeds, threads, sync, log_level,
//   tombstone_grace_s, [limits] max_key_bytes, max_value_bytes,
//   [auth] secret_file, client_secret_file, insecure, [tls] cert, key, ca,
//   [metrics] listen, [redis] listen, allow_flush, [repair] background, period, rate
//
// (conf/shardkv-node.toml documents each one, and docs/operations.md lists them: a test checks
// that page against NodeConfigKeys().) An unreadable or missing file, a TOML syntax
// error, an unknown key, a value of the wrong type or out of range is InvalidArgument
// "FILE:LINE: ..." naming the key, so the node refuses to start before it opens anything.
//
// Thread-safety: plain functions of their arguments.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv::node_tool {

// The log levels --log-level and log_level accept.
inline constexpr const char* kLogLevels[] = {"trace", "debug",    "info", "warn",
                                             "error", "critical", "off"};

struct NodeConfig {
  NodeOptions options;  // defaults, with every key of the file applied
  std::string log_level = "info";
  std::set<std::string> keys;  // the keys the file set, dotted ("limits.max_key_bytes")
};

// Every key the file accepts, dotted for a key of a section ("limits.max_key_bytes"), sorted.
std::vector<std::string> NodeConfigKeys();

// Reads `path` over `config` (keys the file leaves out keep their value).
Status LoadNodeConfig(const std::string& path, NodeConfig* config);

// The same, from TOML text; `path` only names it in errors.
Status ParseNodeConfig(const std::string& text, const std::string& path, NodeConfig* config);

}  // namespace shardkv::node_tool
