// TempDir: a unique directory under $TMPDIR (or /tmp), removed with everything in it. This is the
// tests' only temp-directory helper (storage, node, rebalance, client, lab, integration tests).
// Header-only: every test binary has tests/ on its include path, so no library to link.
#pragma once

#include <stdlib.h>  // mkdtemp (POSIX)

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

namespace shardkv::testing {

class TempDir {
 public:
  // Aborts if the directory cannot be made: a test would otherwise run on a bogus path.
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/shardkv-test-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  // A path inside the directory, not created: a database directory, an output file.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }
  // Writes `contents` to the file `name` inside the directory and returns its path; throws
  // (a test failure under Catch) if the file cannot be written.
  std::string Write(const std::string& name, const std::string& contents) const {
    std::string file = Sub(name);
    std::ofstream out(file, std::ios::binary);
    out << contents;
    out.close();
    if (!out) throw std::runtime_error("TempDir::Write: cannot write " + file);
    return file;
  }

 private:
  std::string path_;
};

}  // namespace shardkv::testing
