#include "placement_lab/key_set.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>

using shardkv::lab::KeySet;
using shardkv::lab::KeySpec;

namespace {

// A file removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& contents) {
    path_ = "/tmp/shardkv_keyset_XXXXXX";
    int fd = mkstemp(path_.data());
    REQUIRE(fd >= 0);
    close(fd);
    std::ofstream(path_, std::ios::binary) << contents;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("keys: the seeds' user:0..K-1 by default", "[lab][keys]") {
  KeySpec spec;
  spec.count = 1000;
  auto keys = KeySet::Generate(spec);
  REQUIRE(keys.ok());
  REQUIRE(keys->size() == 1000);
  CHECK((*keys)[0] == "user:0");
  CHECK((*keys)[999] == "user:999");
  CHECK(keys->description() == "1000 keys (user:%d, 0..999)");
}

TEST_CASE("keys: the default count is the seeds' million", "[lab][keys]") {
  CHECK(KeySpec::kDefaultCount == 1000000);
}

TEST_CASE("keys: random keys are deterministic per seed", "[lab][keys]") {
  KeySpec spec;
  spec.source = KeySpec::Source::kRandom;
  spec.count = 100;
  auto a = KeySet::Generate(spec);
  auto b = KeySet::Generate(spec);
  spec.seed = 7;
  auto c = KeySet::Generate(spec);
  REQUIRE((a.ok() && b.ok() && c.ok()));
  CHECK((*a)[0].substr(0, 5) == "sess:");
  CHECK((*a)[0].size() == 5 + 16);
  for (size_t i = 0; i < 100; ++i) CHECK((*a)[i] == (*b)[i]);
  CHECK((*a)[0] != (*c)[0]);

  // A signed conversion never prints a negative number.
  spec.pattern = "k%d";
  auto d = KeySet::Generate(spec);
  REQUIRE(d.ok());
  for (size_t i = 0; i < d->size(); ++i) CHECK((*d)[i].substr(0, 2) != "k-");
}

TEST_CASE("keys: a file, one key per line", "[lab][keys]") {
  TempFile f("alpha\r\n\nbeta\ngamma");
  KeySpec spec;
  spec.source = KeySpec::Source::kFile;
  spec.file = f.path();
  auto all = KeySet::Generate(spec);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0] == "alpha");  // '\r' stripped
  CHECK((*all)[1] == "beta");   // empty line skipped
  CHECK((*all)[2] == "gamma");  // no final newline needed

  spec.count = 2;
  auto two = KeySet::Generate(spec);
  REQUIRE(two.ok());
  CHECK(two->size() == 2);
}

TEST_CASE("keys: bad inputs are errors, not crashes", "[lab][keys]") {
  KeySpec spec;
  spec.count = 0;
  CHECK(KeySet::Generate(spec).status().IsInvalidArgument());
  spec.count = KeySet::kMaxKeys + 1;
  CHECK(KeySet::Generate(spec).status().IsInvalidArgument());
  spec.count = 10;
  spec.pattern = "user:%s";
  CHECK(KeySet::Generate(spec).status().IsInvalidArgument());

  KeySpec file;
  file.source = KeySpec::Source::kFile;
  file.file = "/nonexistent/keys.txt";
  auto missing = KeySet::Generate(file);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("/nonexistent/keys.txt") != std::string::npos);

  TempFile empty("\n\n\r\n");
  file.file = empty.path();
  auto none = KeySet::Generate(file);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message().find("no keys") != std::string::npos);

  file.file = "/tmp";  // a directory
  CHECK_FALSE(KeySet::Generate(file).ok());
}
