// The files of a local cluster directory that `shardkv cluster ...` keeps (the on-disk half of
// LocalCluster, local_cluster.h): its layout, cluster.conf, the node-<id> directories and the
// small launcher files in them. Split from local_cluster.{h,cc}, which keep the processes
// (spawning, probing, stopping nodes); local_cluster.h includes this header, so its users see
// both.
//
// Layout of a cluster directory D (always handled as an absolute path, so that a node relaunched
// from another working directory finds the same files):
//
//   D/cluster.conf         key=value lines: the parameters `cluster up` was given (ClusterConf)
//   D/.launcher.lock       flock()ed while a launcher command changes the directory
//   D/node-<id>/           the node's --data directory (RocksDB), plus:
//     args                 the node's launch arguments, one per line (binary excluded, so a
//                          rebuilt shardkv-node is picked up); start-node relaunches from it
//     pid                  pid of the running process; removed when the launcher stops it
//     port                 written by the node itself once it is listening
//     node.log             the node's stdout and stderr (appended across restarts)
//     stopped_at           unix seconds at which the launcher last stopped the node
//     removed              present once the node left the cluster (a finished `cluster
//                          remove-node`): every command then skips the directory (data kept)
//
// Nothing here prints. Thread-safety: the functions are thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::cli {

// What `cluster up` was asked for; start-node and status read it back.
struct ClusterConf {
  uint32_t nodes = 0;
  std::string mode = "ring";
  uint32_t replicas = 0;
  uint32_t write_quorum = 0;
  uint32_t read_quorum = 0;
  uint32_t vnodes = 160;
  uint32_t shards = 1024;
  uint64_t tombstone_grace_s = 10 * 24 * 3600;
  uint64_t cluster_id = 0;
  // False until every node accepted the epoch-1 map: a later `up` then knows that the node
  // directories are leftovers of a failed start, safe to wipe.
  bool formed = false;
  // `up --base-port`: -1 free ports from 7000 up, 0 ephemeral, P ports from P. `cluster
  // add-node` picks the new node's port the same way. -1 when the file predates the key.
  int base_port = -1;
};

std::string ClusterConfPath(const std::string& dir);
Status WriteClusterConf(const std::string& dir, const ClusterConf& conf);
// NotFound if there is no cluster.conf; Corruption if it cannot be parsed.
StatusOr<ClusterConf> ReadClusterConf(const std::string& dir);

// `dir` made absolute, symlinks resolved, no trailing slash: every spelling of one directory
// yields the same node paths (they end up in each node's args and in pid checks).
std::string AbsoluteDir(const std::string& dir);

std::string NodeDir(const std::string& dir, uint32_t id);
// Ids of the node-<id> directories in `dir` that are cluster members (no `removed` marker),
// ascending.
std::vector<uint32_t> ListNodeIds(const std::string& dir);
// Ids of every node-<id> directory, removed nodes included (ids are never reused).
std::vector<uint32_t> ListAllNodeIds(const std::string& dir);
// True if `node_dir` holds the `removed` marker.
bool NodeRemoved(const std::string& node_dir);
std::string RemovedMarkerPath(const std::string& node_dir);

// Reads small launcher files; nullopt when absent or malformed.
std::optional<pid_t> ReadPidFile(const std::string& node_dir);
std::optional<uint16_t> ReadPortFile(const std::string& node_dir);
std::optional<int64_t> ReadStoppedAt(const std::string& node_dir);
Status WriteTextFile(const std::string& path, const std::string& text);  // atomic (tmp + rename)
void RemoveFile(const std::string& path);                                // ignores errors

}  // namespace shardkv::cli
