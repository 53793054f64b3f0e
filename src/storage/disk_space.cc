// Free space checks, and the disk-full episode tracking behind Storage::disk_full().
#include "storage/disk_space.h"

#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

#include "storage/storage_rep.h"

namespace shardkv::storage {

StatusOr<uint64_t> FreeBytes(const std::string& dir) {
  struct statvfs st {};
  if (statvfs(dir.c_str(), &st) != 0) {
    return Status::IOError("checking free space in " + dir + ": " + std::strerror(errno));
  }
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

Status CheckFreeSpaceForStart(const std::string& dir, uint64_t free_bytes) {
  if (free_bytes >= kMinFreeBytesToStart) return Status::OK();
  return Status::ResourceExhausted("no space left on device in " + dir + " (" +
                                   std::to_string(free_bytes >> 10) + " KiB free; a node needs " +
                                   std::to_string(kMinFreeBytesToStart >> 20) +
                                   " MiB to start): free some space and start it again");
}

Status Storage::Rep::Checked(const rocksdb::Status& s, std::string_view context, bool write) {
  if (s.IsIOError()) io_errors.fetch_add(1, std::memory_order_relaxed);
  if (s.IsNoSpace()) {
    failed_writes.fetch_add(1, std::memory_order_relaxed);
    // Logged once per episode: a full disk fails every write until space is freed, and a line
    // per write would flood the log (and fill the disk holding it).
    if (!disk_full.exchange(true)) {
      spdlog::error("no space left on device in {}: writes fail until space is freed ({}: {})",
                    path, context, s.ToString());
    }
    return Status::IOError(kNoSpaceMessage + std::to_string(options.node_id));
  }
  if (write && s.ok() && disk_full.load(std::memory_order_relaxed) && disk_full.exchange(false)) {
    spdlog::info("writes succeed again in {} ({} failed for lack of space)", path,
                 failed_writes.exchange(0));
  }
  return FromRocks(s, context);
}

bool Storage::disk_full() const { return rep_->disk_full.load(std::memory_order_relaxed); }
uint64_t Storage::io_errors() const { return rep_->io_errors.load(std::memory_order_relaxed); }

}  // namespace shardkv::storage
