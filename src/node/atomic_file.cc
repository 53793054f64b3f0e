#include "node/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shardkv::node {
namespace {

Status Errno(const std::string& what, const std::string& path, int err) {
  return Status::IOError("cannot " + what + " " + path + ": " + std::strerror(err));
}

// write(2) until all of `text` is written (a short write is not an error by itself).
int WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? errno : EIO;
    done += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace

Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           const std::string& text) {
  // A buffered stream writes at close and reports nothing there: on a full tmpfs that left an
  // empty port file while the node said "listening" (the CLI then waited out --wait).
  const std::string tmp = dir + "/" + name + ".tmp";
  const std::string target = dir + "/" + name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("create", tmp, errno);
  int err = WriteAll(fd, text);
  const char* step = "write";
  if (err == 0 && ::fsync(fd) != 0) {
    err = errno;
    step = "fsync";
  }
  if (::close(fd) != 0 && err == 0) {
    err = errno;
    step = "close";
  }
  if (err != 0) {
    ::unlink(tmp.c_str());
    return Errno(step, tmp, err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    err = errno;
    ::unlink(tmp.c_str());
    return Status::IOError("cannot rename " + tmp + " to " + target + ": " + std::strerror(err));
  }
  // The rename is durable once the directory is; a failure here loses nothing a reader sees.
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
  return Status::OK();
}

}  // namespace shardkv::node
