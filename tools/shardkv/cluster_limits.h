// The range of every numeric flag of `shardkv cluster ...` and `shardkv rebalance ...`, in one
// place: the CLI11 option checks use these constants, docs/operations.md's table of ranges is
// written from them, and the table-driven limit tests run each flag at its maximum and at maximum
// + 1. A value outside its range is refused by the parser with one `error:` line and exit 2, before
// anything is started or sent.
#pragma once

#include <cstdint>

#include "shardkv/cluster_map.h"

namespace shardkv::cli::limits {

// cluster up
inline constexpr uint32_t kMinNodes = 1;
inline constexpr uint32_t kMaxNodes = 64;  // --nodes, --replicas, --write-quorum, --read-quorum
// --vnodes and --shards: the cluster map's own maxima (what an add-node completes within a
// minute on a 2-core machine; see include/shardkv/cluster_map.h).
inline constexpr uint32_t kMinVnodes = 1;
inline constexpr uint32_t kMaxVnodes = ::shardkv::kMaxVnodes;
inline constexpr uint32_t kMinShards = 1;
inline constexpr uint32_t kMaxShards = ::shardkv::kMaxShards;
inline constexpr int kMinBasePort = 0;  // 0: any free port
inline constexpr int kMaxBasePort = 65535;
inline constexpr uint16_t kFirstDefaultPort = 7000;  // without --base-port: free ports from here
inline constexpr uint64_t kMinTombstoneGraceS = 1;
inline constexpr uint64_t kMaxTombstoneGraceS = uint64_t{1} << 40;
inline constexpr uint64_t kDefaultTombstoneGraceS = 10 * 24 * 3600;

// --wait of up, start-node, stop-node, down, add-node (seconds)
inline constexpr uint32_t kMinWaitS = 1;
inline constexpr uint32_t kMaxWaitS = 3600;

// Node ids (stop-node, start-node, remove-node ID)
inline constexpr uint32_t kMinNodeId = 1;
inline constexpr uint32_t kMaxNodeId = 1u << 30;

// add-node / join / remove-node / rebalance throttle
inline constexpr double kMinWeight = 0.001;
// A node of weight W has W x vnodes points on the ring; at 1000 (160,000 points beside 480) every
// map install and plan walked so far past the new node's points that the busy nodes missed
// their gossip deadlines and the drive was taken over twice (the change failed). 100 works.
inline constexpr double kMaxWeight = 100.0;
inline constexpr uint32_t kMinRateMb = 0;  // 0: unthrottled
inline constexpr uint32_t kMaxRateMb = 1u << 20;
inline constexpr uint32_t kDefaultRateMb = 32;
inline constexpr uint32_t kMinStreams = 1;
inline constexpr uint32_t kMaxStreams = 64;
inline constexpr uint32_t kDefaultStreams = 2;

// rebalance watch
inline constexpr uint32_t kMinWatchIntervalMs = 100;
inline constexpr uint32_t kMaxWatchIntervalMs = 60000;
inline constexpr uint32_t kMinWatchTimeoutS = 1;
inline constexpr uint32_t kMaxWatchTimeoutS = 7 * 24 * 3600;

}  // namespace shardkv::cli::limits
