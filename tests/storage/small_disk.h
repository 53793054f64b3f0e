// SmallDisk: a tiny tmpfs mounted for one test, to produce real ENOSPC failures (a full disk,
// findings rows 8 and 9). Mounting needs root (CI runs as root); elsewhere ok() is false and the
// caller skips with a WARN. Fill() takes every free byte with a filler file, Free() deletes it.
#pragma once

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

namespace shardkv::testing {

class SmallDisk {
 public:
  explicit SmallDisk(size_t mib) : mount_point_(dir_.Sub("disk")) {
    std::filesystem::create_directories(mount_point_);
    const std::string data = "size=" + std::to_string(mib) + "m";
    if (::mount("tmpfs", mount_point_.c_str(), "tmpfs", 0, data.c_str()) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(mount_point_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;

  bool ok() const { return mounted_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return mount_point_; }

  // Writes a filler file until the disk refuses another byte (ENOSPC), in ever smaller chunks.
  // Returns the bytes written. Bounded: at most the disk's size.
  size_t Fill() {
    const std::string filler = mount_point_ + "/filler-" + std::to_string(fillers_++);
    const int fd = ::open(filler.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 0;
    std::vector<char> chunk(size_t{1} << 20, 'x');
    size_t written = 0;
    for (size_t size = chunk.size(); size >= 512;) {
      const ssize_t n = ::write(fd, chunk.data(), size);
      if (n > 0) {
        written += static_cast<size_t>(n);
      } else {
        size /= 2;  // ENOSPC (or a short write): try a smaller piece of what is left
      }
    }
    ::close(fd);
    return written;
  }
  // Deletes every filler file.
  void Free() {
    for (int i = 0; i < fillers_; ++i) {
      std::filesystem::remove(mount_point_ + "/filler-" + std::to_string(i));
    }
  }

 private:
  TempDir dir_;
  std::string mount_point_;
  bool mounted_ = false;
  std::string error_;
  int fillers_ = 0;
};

}  // namespace shardkv::testing
