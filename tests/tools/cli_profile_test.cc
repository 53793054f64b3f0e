// The CLI profile parser (tools/shardkv/cli_profile.h): every key in both accepted forms, and
// every error (syntax, unknown key, wrong type or value, missing --profile file) as one
// InvalidArgument naming FILE:LINE and the key, with nothing thrown.
#include "cli_profile.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "testing/temp_dir.h"

using shardkv::Status;
using shardkv::cli::CliProfile;
using shardkv::cli::DefaultProfilePath;
using shardkv::cli::LoadProfile;
using shardkv::cli::ParseProfile;

namespace {

// The error of parsing `text` as "p.toml" (REQUIREs that it fails).
std::string ErrorOf(const std::string& text) {
  auto p = ParseProfile(text, "p.toml");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Status::Code::kInvalidArgument);
  return p.status().message();
}

}  // namespace

TEST_CASE("cli profile: every key, both forms of cluster and cluster_id", "[unit][cli]") {
  auto p = ParseProfile(
      "# defaults\n"
      "cluster = [\"10.0.0.1:7000\", \"10.0.0.2:7000,10.0.0.3:7000\"]\n"
      "auth_secret_file = \"/etc/shardkv/secret\"\n"
      "cluster_id = \"18345747148170026747\"\n"
      "timeout_ms = 2500\n"
      "consistency = \"all\"\n",
      "p.toml");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK(p->cluster == std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000", "10.0.0.3:7000"});
  CHECK(p->credentials.auth_secret_file == "/etc/shardkv/secret");
  CHECK(p->cluster_id == 18345747148170026747ull);  // above INT64_MAX: only a string holds it
  CHECK(p->timeout_ms == 2500u);
  CHECK(p->consistency == "all");
  CHECK(p->path == "p.toml");

  auto q = ParseProfile("cluster = \"[::1]:7000,h:1\"\ncluster_id = 42\n", "q.toml");
  REQUIRE(q.ok());
  CHECK(q->cluster == std::vector<std::string>{"[::1]:7000", "h:1"});
  CHECK(q->cluster_id == 42u);
  CHECK_FALSE(q->timeout_ms.has_value());
  CHECK_FALSE(q->consistency.has_value());

  auto empty = ParseProfile("", "e.toml");
  REQUIRE(empty.ok());
  CHECK(empty->cluster.empty());
  CHECK(empty->cluster_id == 0);
}

TEST_CASE("cli profile: errors name the file, the line and the key", "[unit][cli]") {
  std::string e = ErrorOf("cluster = [\"10.0.0.1:7000\"]\n\nclustr = \"x\"\n");
  CHECK(e.find("p.toml:3: key 'clustr': unknown key") == 0);
  e = ErrorOf("timeout_ms = \"5000\"\n");
  CHECK(e.find("p.toml:1: key 'timeout_ms': expected an integer") == 0);
  e = ErrorOf("\ntimeout_ms = 0\n");
  CHECK(e.find("p.toml:2: key 'timeout_ms': must be between") == 0);
  e = ErrorOf("cluster = 7000\n");
  CHECK(e.find("p.toml:1: key 'cluster': expected an array") == 0);
  e = ErrorOf("cluster = [\"10.0.0.1:7000\", 7001]\n");
  CHECK(e.find("p.toml:1: key 'cluster': every entry") == 0);
  e = ErrorOf("cluster = \"10.0.0.1\"\n");
  CHECK(e.find("p.toml:1: key 'cluster': bad address \"10.0.0.1\"") == 0);
  e = ErrorOf("cluster = []\n");
  CHECK(e.find("key 'cluster': no address") != std::string::npos);
  e = ErrorOf("cluster_id = -3\n");
  CHECK(e.find("p.toml:1: key 'cluster_id': must be positive") == 0);
  e = ErrorOf("cluster_id = \"12ab\"\n");
  CHECK(e.find("key 'cluster_id': \"12ab\" is no positive 64-bit integer") != std::string::npos);
  e = ErrorOf("cluster_id = \"99999999999999999999\"\n");  // above UINT64_MAX
  CHECK(e.find("is no positive 64-bit integer") != std::string::npos);
  e = ErrorOf("consistency = \"most\"\n");
  CHECK(e.find("p.toml:1: key 'consistency': \"most\" is not one, quorum or all") == 0);
  e = ErrorOf("auth_secret_file = 1\n");
  CHECK(e.find("key 'auth_secret_file'") != std::string::npos);
  // A syntax error: toml++ throws, the parser returns it with its line.
  e = ErrorOf("cluster = [\"a:1\"\n\ntimeout_ms = = 3\n");
  CHECK(e.rfind("p.toml:", 0) == 0);
  e = ErrorOf("a = 1\na = 2\n");
  CHECK(e.rfind("p.toml:2", 0) == 0);
}

TEST_CASE("cli profile: the default path and loading", "[unit][cli]") {
  shardkv::testing::TempDir dir;
  setenv("XDG_CONFIG_HOME", dir.path().c_str(), 1);
  CHECK(DefaultProfilePath() == dir.path() + "/shardkv/cli.toml");
  // No default profile: an empty one, not an error.
  auto none = LoadProfile("");
  REQUIRE(none.ok());
  CHECK(none->path.empty());
  // A missing --profile is an error.
  auto missing = LoadProfile(dir.Sub("nope.toml"));
  CHECK(missing.status().code() == Status::Code::kInvalidArgument);
  CHECK(missing.status().message().find(dir.Sub("nope.toml")) != std::string::npos);

  std::filesystem::create_directories(dir.Sub("shardkv"));
  std::ofstream(dir.Sub("shardkv/cli.toml")) << "cluster = \"127.0.0.1:7000\"\n";
  auto found = LoadProfile("");
  REQUIRE(found.ok());
  CHECK(found->path == dir.path() + "/shardkv/cli.toml");
  CHECK(found->cluster == std::vector<std::string>{"127.0.0.1:7000"});

  std::ofstream(dir.Sub("bad.toml")) << "cluster = \"127.0.0.1:7000\"\nbogus = 1\n";
  auto bad = LoadProfile(dir.Sub("bad.toml"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find(dir.Sub("bad.toml") + ":2: key 'bogus'") == 0);

  // Without XDG_CONFIG_HOME (or a relative one, which the spec says to ignore): ~/.config.
  setenv("XDG_CONFIG_HOME", "relative", 1);
  setenv("HOME", dir.path().c_str(), 1);
  CHECK(DefaultProfilePath() == dir.path() + "/.config/shardkv/cli.toml");
  unsetenv("XDG_CONFIG_HOME");
  CHECK(DefaultProfilePath() == dir.path() + "/.config/shardkv/cli.toml");
}
