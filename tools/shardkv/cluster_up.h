// `shardkv cluster up`: create a local cluster (start N shardkv-node processes, form epoch 1),
// or restart a stopped one with its data. Also the launch helpers start-node shares.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cluster_limits.h"
#include "global_options.h"
#include "local_cluster.h"

namespace shardkv::cli {

struct UpFlags {
  uint32_t nodes = 0;  // 0: not given (a restart needs none; a new cluster requires it)
  std::string mode = "ring";
  uint32_t replicas = 0;  // 0 = default min(3, nodes)
  uint32_t write_quorum = 0;
  uint32_t read_quorum = 0;
  uint32_t vnodes = 160;
  uint32_t shards = 1024;
  int base_port = -1;  // -1 = free ports from 7000 up; 0 = ephemeral
  uint64_t tombstone_grace_s = limits::kDefaultTombstoneGraceS;
  uint32_t wait_s = 60;
  // Which flags the user gave, so that restarting a stopped cluster can refuse contradictions.
  std::set<std::string> given;
};

// Runs `cluster up`; returns the exit code.
int DoUp(const GlobalOptions& g, UpFlags f);

// Progress and notes go to stderr, one line each.
void Progress(const std::string& line);
SteadyClock::time_point DeadlineIn(uint32_t seconds);

// Refuses (FailedPrecondition) to restart a node that has been down longer than the tombstone
// grace: its replicas may have purged tombstones it never saw, so its stale values would
// resurrect deleted keys. `reference` is the time the rest of the cluster was last running.
Status CheckTombstoneGrace(const std::string& dir, uint32_t id, int64_t reference,
                           uint64_t grace_s);

// Launches every node in `launches` and waits until they listen.
Status LaunchAndWait(const std::string& binary, const std::string& dir,
                     const std::vector<std::pair<uint32_t, std::vector<std::string>>>& launches,
                     uint32_t wait_s, std::vector<PendingNode>* started,
                     std::vector<uint16_t>* ports, NodeProber* prober, uint32_t* exited_id);

// Reports a failed launch (quoting the log of a node that exited, and the way out when the node
// refused its data directory), then stops what started. Returns the exit code (1).
int FailLaunch(const Status& s, const std::string& dir, uint32_t exited_id,
               const std::vector<PendingNode>& started);

// A warning line when R, W and Q leave no room for a node failure (W == R or Q == R), e.g. a
// default 2-node cluster (R=2, W=2, Q=2); empty otherwise.
std::string FailureToleranceWarning(uint32_t nodes, uint32_t replicas, uint32_t write_quorum,
                                    uint32_t read_quorum);

}  // namespace shardkv::cli
