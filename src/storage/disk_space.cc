// The checks of a data directory before a node starts on it: free space, writability.
#include "storage/disk_space.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

Status CheckWritableForStart(const std::string& dir) {
  // access(2) sees a read-only mount (EROFS) and missing permissions without creating anything,
  // and without touching RocksDB's LOCK file (closing any descriptor of it would drop a lock
  // this process may hold on it).
  if (::access(dir.c_str(), W_OK) == 0) return Status::OK();
  const int err = errno;
  if (err == EROFS) {
    return Status::FailedPrecondition("database directory " + dir +
                                      " is on a read-only file system: remount it read-write, "
                                      "then start the node again");
  }
  if (err == EACCES || err == EPERM) {
    return Status::FailedPrecondition("database directory " + dir +
                                      " is not writable by this process (" + std::strerror(err) +
                                      "): give its user write permission, then start it again");
  }
  return Status::IOError("checking that " + dir + " is writable: " + std::strerror(err));
}

}  // namespace shardkv::storage
