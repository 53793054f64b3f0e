// `cluster start-node N --rebuild` (design.md "CLI"): a node whose data
// must not come back (lost, or down longer than the tombstone grace) is started with
// `--rebuild --seeds ...` and re-streams its ranges from the other replicas before it serves.
//
// Nothing is deleted before every check passed (rebuild_check.h: the port is free, the live map
// names the node, another replica of each of its ranges answers). Its data directory is then
// set aside (D/node-N/db -> D/node-N/db.before-rebuild, with the marker D/node-N/rebuilding) and
// removed only once the node is up and serving. Any failure (the node exits, the wait times out,
// a signal to the command) stops the node and puts everything back as it was. A command killed
// outright (SIGKILL) leaves the marker; the next start-node or `cluster up` of that node finishes
// its work first (FinishInterruptedRebuild).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "change_guard.h"
#include "cluster_dir.h"

namespace shardkv::cli {

// The names inside a node directory.
inline constexpr const char* kKeptDbName = "db.before-rebuild";
inline constexpr const char* kRebuildMarkerName = "rebuilding";

// Rebuilds stopped node `id` of `dir` (the caller holds the directory lock and checked that it
// is not running): `args` are its launch arguments (cluster id included), `guard` was built
// before any thread started. Prints progress and the result; returns the exit code.
int RebuildNode(const std::string& dir, uint32_t id, const ClusterConf& conf,
                std::vector<std::string> args, const std::string& binary, uint32_t wait_s,
                std::chrono::milliseconds probe_timeout, InterruptGuard* guard);

// If a rebuild of stopped node `id` was interrupted before it finished or undid itself (the
// marker is there), completes it: keeps the rebuilt data if the rebuild had completed (the node
// wrote its port file, which it does only once it serves), else puts the old data back. Returns
// a line saying what it did, or nullopt if there was nothing to do. REQUIRES: the directory
// lock; the node is not running.
std::optional<std::string> FinishInterruptedRebuild(const std::string& dir, uint32_t id);

}  // namespace shardkv::cli
