// A local node's launch arguments (D/node-<id>/args, one per line, binary excluded) and what the
// launcher derives from them: the listen port, the cluster id the node must belong to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::cli {

Status WriteArgsFile(const std::string& node_dir, const std::vector<std::string>& args);
StatusOr<std::vector<std::string>> ReadArgsFile(const std::string& node_dir);
// The port in the "--listen host:port" argument; nullopt if absent.
std::optional<uint16_t> ListenPortInArgs(const std::vector<std::string>& args);
// A copy of `args` whose --listen port is `port`.
std::vector<std::string> WithListenPort(std::vector<std::string> args, uint16_t port);

// `args` with a --listen port of 0 replaced by the port the node last listened on (node_dir/port,
// written by the node): a node first launched on an ephemeral port by a launcher that died before
// recording the port (a killed `cluster add-node`) must come back at the address the cluster map
// names, not on a new one. Unchanged without a port file or with a fixed port.
std::vector<std::string> WithRecordedPort(std::vector<std::string> args,
                                          const std::string& node_dir);

// A copy of `args` without `flag` and its value.
std::vector<std::string> WithoutFlag(std::vector<std::string> args, const std::string& flag);
// A copy of `args` without --rebuild and --seeds: a rebuild is one start, never recorded (an
// older launcher recorded it, and add-node copied it into new nodes).
std::vector<std::string> WithoutRebuildFlags(std::vector<std::string> args);
// A copy of `args` with "--cluster-id ID": once a cluster is formed, every node it launches is
// told its cluster, so a node whose data directory was lost refuses to start as a fresh,
// empty node instead of serving as a member with no data (it must be rebuilt:
// `cluster start-node ID --rebuild`). A fresh node (add-node, before its change begins) must
// not get it. Unchanged if `binary` does not know the flag (an older shardkv-node).
std::vector<std::string> WithClusterId(std::vector<std::string> args, uint64_t cluster_id,
                                       const std::string& binary);
// True if `binary --help` lists --cluster-id (asked once per process).
bool NodeSupportsClusterId(const std::string& binary);

struct ClusterConf;

// The port for a new node of `dir` (add-node), the way `cluster up` chose them: 0 for
// --base-port 0, else the first free port from P + id - 1 (--base-port P) or from 7000,
// skipping ports other nodes of the directory are recorded with (a stopped node comes back on
// its port).
StatusOr<uint16_t> ChooseNewPort(const ClusterConf& conf, const std::string& dir, uint32_t id);
// The new node's arguments: another member's, with its own id, data directory and port, and
// without --cluster-id (a fresh node would refuse its empty data directory with it).
std::vector<std::string> NewNodeArgs(const std::string& dir, const ClusterConf& conf, uint32_t id,
                                     uint16_t port);

// Who listens on 127.0.0.1:`port`, for "port P is taken" messages: the pid (from /proc, when it
// is visible to us) and, if it is a shardkv-node, its node and cluster id. E.g. " by node 3 of
// cluster 1234 (pid 4242)", " by pid 4242", or " by another process".
std::string DescribePortHolder(uint16_t port);

}  // namespace shardkv::cli
