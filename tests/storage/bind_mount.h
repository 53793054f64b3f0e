// BindMount: a directory bind-mounted onto itself for one test, so the test can make it
// read-only and writable again (`mount --bind DIR DIR; mount -o remount,ro,bind DIR`) as an
// operator or a failing disk would. Files a process opened before the bind keep working; new
// files, renames and deletes through the path fail with EROFS while it is read-only. Mounting
// needs root (CI runs as root); elsewhere ok() is false and the caller skips with a WARN. The
// destructor unmounts (lazily, so a process still holding files there does not stop it), also
// when the test fails.
#pragma once

#include <sys/mount.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace shardkv::testing {

class BindMount {
 public:
  // REQUIRES: `dir` exists.
  explicit BindMount(std::string dir) : dir_(std::move(dir)) {
    if (::mount(dir_.c_str(), dir_.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~BindMount() { Unmount(); }
  BindMount(const BindMount&) = delete;
  BindMount& operator=(const BindMount&) = delete;

  bool ok() const { return mounted_; }
  const std::string& error() const { return error_; }

  // Remounts read-only, or writable again; false (with error()) if the kernel refused.
  bool SetReadOnly(bool read_only) {
    const unsigned long flags = MS_REMOUNT | MS_BIND | (read_only ? MS_RDONLY : 0);
    if (::mount(nullptr, dir_.c_str(), nullptr, flags, nullptr) == 0) return true;
    error_ = std::strerror(errno);
    return false;
  }
  void Unmount() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
    mounted_ = false;
  }

 private:
  std::string dir_;
  bool mounted_ = false;
  std::string error_;
};

}  // namespace shardkv::testing
