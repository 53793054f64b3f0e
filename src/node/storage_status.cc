#include "node/storage_status.h"

#include <string>

#include "shardkv/stats.h"
#include "storage/disk_space.h"

namespace shardkv::node {
namespace {

std::string Error(const storage::StorageHealth& h, uint32_t self_id) {
  // A full disk in the plain words a client of a full single node has always seen.
  return h.no_space ? storage::kNoSpaceMessage + std::to_string(self_id) : h.error;
}

}  // namespace

Status StorageWriteRefusal(const storage::Storage& storage, uint32_t self_id) {
  if (!storage.failing()) return Status::OK();
  const storage::StorageHealth h = storage.Health();
  if (!h.failing) return Status::OK();
  return Status::Unavailable(
      "node " + std::to_string(self_id) +
      " coordinates no writes while its storage fails: " + Error(h, self_id));
}

Status StorageReadiness(const storage::Storage& storage, uint32_t self_id) {
  const storage::StorageHealth h = storage.Health();
  if (!h.failing) return Status::OK();
  const uint64_t now = storage.WallClockMs();
  const uint64_t seconds = now > h.failing_since_ms ? (now - h.failing_since_ms) / 1000 : 0;
  return Status::Unavailable("node " + std::to_string(self_id) + "'s storage fails (for " +
                             std::to_string(seconds) + " s): " + Error(h, self_id) +
                             "; it coordinates no writes until its storage works again");
}

void AddStorageStats(const storage::Storage& storage, net::StatsResponse* out) {
  const storage::StorageHealth h = storage.Health();
  out->counters[std::string(stats::storage_io_errors)] = static_cast<int64_t>(h.io_errors);
  out->counters[std::string(stats::storage_failures)] = static_cast<int64_t>(h.failures);
  out->gauges[std::string(stats::disk_full)] = h.no_space ? 1.0 : 0.0;
  out->gauges[std::string(stats::storage_failing)] = h.failing ? 1.0 : 0.0;
  if (h.failing) out->info[std::string(stats::storage_error)] = h.error;
}

}  // namespace shardkv::node
