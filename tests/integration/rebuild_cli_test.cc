// `cluster start-node N --rebuild` never destroys data it cannot replace: every precondition is
// checked before anything is touched, the old data is kept aside until the rebuilt node serves,
// and a failed rebuild leaves the node as it was (tools/shardkv/node_rebuild.h). Multi-process:
// real shardkv-node processes driven through the shardkv CLI.
#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "testing/cli_background.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

namespace {

using shardkv::testing::BackgroundCli;
using shardkv::testing::Contains;
using shardkv::testing::LineCount;
using shardkv::testing::LocalCluster;
using shardkv::testing::ParseStatus;
using shardkv::testing::ProcessResult;
using shardkv::testing::ReadAll;
using shardkv::testing::ReadPid;
using shardkv::testing::SlowNodeLaunch;
namespace fs = std::filesystem;

std::string NodeDir(const LocalCluster& c, int id) {
  return c.dir() + "/node-" + std::to_string(id);
}

// The files of a stopped node's database with their sizes: unchanged means untouched.
std::map<std::string, uintmax_t> DbFiles(const LocalCluster& c, int id) {
  std::map<std::string, uintmax_t> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(NodeDir(c, id) + "/db", ec)) {
    files[e.path().filename().string()] = e.is_regular_file() ? e.file_size() : 0;
  }
  return files;
}

void UpForRebuild(const LocalCluster& c, int nodes) {
  REQUIRE(
      c.Run({"cluster", "up", "--nodes", std::to_string(nodes), "--base-port", "0"}).exit_code ==
      0);
}

// What a refused rebuild must leave: the same database files, the same args, nothing set aside.
void CheckUntouched(const LocalCluster& c, int id, const std::map<std::string, uintmax_t>& db,
                    const std::string& args) {
  CHECK_FALSE(db.empty());
  CHECK(DbFiles(c, id) == db);
  CHECK(ReadAll(NodeDir(c, id) + "/args") == args);
  CHECK_FALSE(fs::exists(NodeDir(c, id) + "/db.before-rebuild"));
  CHECK_FALSE(fs::exists(NodeDir(c, id) + "/rebuilding"));
}

}  // namespace

TEST_CASE("rebuild: a port taken by another cluster refuses before the data is touched",
          "[multiprocess][rebuild]") {
  LocalCluster a, b;
  UpForRebuild(a, 3);
  REQUIRE(a.Run({"load", "--count", "200"}).exit_code == 0);
  REQUIRE(a.Run({"cluster", "down"}).exit_code == 0);
  const std::string port = ReadAll(NodeDir(a, 1) + "/port");
  REQUIRE(b.Run({"cluster", "up", "--nodes", "1", "--base-port", port.substr(0, port.find('\n'))})
              .exit_code == 0);
  const auto db = DbFiles(a, 1);
  const std::string args = ReadAll(NodeDir(a, 1) + "/args");
  ProcessResult r = a.Run({"cluster", "start-node", "1", "--rebuild"});
  INFO(r.Text());
  CHECK(r.exit_code == 2);
  CHECK(LineCount(r.err) == 1);
  CHECK(Contains(r.err, "is taken by"));
  CHECK(Contains(r.err, "nothing was changed"));
  CHECK_FALSE(Contains(r.out, "wiped"));
  CheckUntouched(a, 1, db, args);
  // Status does not send the user to a rebuild that cannot help: it names what to do instead.
  ProcessResult status = a.Run({"cluster", "status"});
  INFO(status.Text());
  CHECK(Contains(status.out, "another process took its port"));
  CHECK(Contains(status.out, "'shardkv cluster start-node 1'"));
  CHECK_FALSE(Contains(status.out, "--rebuild"));
}

TEST_CASE("rebuild: with every other node down it refuses and keeps the data",
          "[multiprocess][rebuild]") {
  LocalCluster c;
  UpForRebuild(c, 3);
  REQUIRE(c.Run({"load", "--count", "200"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "down"}).exit_code == 0);
  const auto db = DbFiles(c, 3);
  const std::string args = ReadAll(NodeDir(c, 3) + "/args");
  ProcessResult r = c.Run({"cluster", "start-node", "3", "--rebuild"});
  INFO(r.Text());
  CHECK(r.exit_code == 3);
  CHECK(Contains(r.err, "no other node answers"));
  CHECK(Contains(r.err, "nothing was changed"));
  CheckUntouched(c, 3, db, args);
  CHECK(c.Pids().empty());
  // The data was kept: the cluster comes back with it.
  REQUIRE(c.Run({"cluster", "up"}).exit_code == 0);
  CHECK(c.Run({"verify", "--count", "200"}).exit_code == 0);
}

TEST_CASE("rebuild: a node that is not a member refuses before anything is touched",
          "[multiprocess][rebuild]") {
  LocalCluster c;
  UpForRebuild(c, 1);
  // An interrupted add-node leaves node 2: a running, unformed node no map names.
  const int orphan = shardkv::testing::KillAddNodeLeavingOrphan(c);
  REQUIRE(orphan == 2);
  REQUIRE(c.Run({"cluster", "stop-node", "2"}).exit_code == 0);
  const auto db = DbFiles(c, 2);
  const std::string args = ReadAll(NodeDir(c, 2) + "/args");
  ProcessResult r = c.Run({"cluster", "start-node", "2", "--rebuild"});
  INFO(r.Text());
  CHECK(r.exit_code == 2);
  CHECK(Contains(r.err, "node 2 is not a member of cluster"));
  CHECK(Contains(r.err, "forget-node 2"));
  CheckUntouched(c, 2, db, args);
  CHECK_FALSE(ReadPid(NodeDir(c, 2) + "/pid").has_value());
}

TEST_CASE("rebuild: a rebuild that fails after the node started puts the old data back",
          "[multiprocess][rebuild]") {
  LocalCluster c;
  UpForRebuild(c, 3);
  REQUIRE(c.Run({"load", "--count", "300"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "stop-node", "3"}).exit_code == 0);
  const auto db = DbFiles(c, 3);
  const std::string args = ReadAll(NodeDir(c, 3) + "/args");
  const std::string stopped_at = ReadAll(NodeDir(c, 3) + "/stopped_at");
  std::optional<int> status;
  std::string err;
  {
    // The rebuilding node starts 3 s late; meanwhile the nodes it would copy from die.
    SlowNodeLaunch slow(c.dir(), "--rebuild", 3);
    BackgroundCli start(c, {"cluster", "start-node", "3", "--rebuild", "--wait", "60"});
    const bool set_aside =
        shardkv::testing::PollUntil([&] { return ReadPid(NodeDir(c, 3) + "/pid").has_value(); },
                                    std::chrono::seconds(30), std::chrono::milliseconds(10));
    REQUIRE(set_aside);
    CHECK(fs::exists(NodeDir(c, 3) + "/db.before-rebuild"));
    for (int id : {1, 2}) {
      const auto pid = ReadPid(NodeDir(c, id) + "/pid");
      REQUIRE(pid.has_value());
      kill(*pid, SIGKILL);
    }
    status = start.Wait(std::chrono::seconds(90));
    err = start.Err();
  }
  INFO(err);
  REQUIRE(status.has_value());
  CHECK(WIFEXITED(*status));
  CHECK(WEXITSTATUS(*status) == 1);
  CHECK(Contains(err, "back as it was"));
  CheckUntouched(c, 3, db, args);
  CHECK(ReadAll(NodeDir(c, 3) + "/stopped_at") == stopped_at);
  CHECK_FALSE(ReadPid(NodeDir(c, 3) + "/pid").has_value());
  // Its data is whole: with the others back, it starts as itself and serves what it held.
  REQUIRE(c.Run({"cluster", "start-node", "1"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "start-node", "2"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "start-node", "3"}).exit_code == 0);
  CHECK(ParseStatus(c.Run({"cluster", "status", "--json"}).out)[3].state == "up");
  CHECK(c.Run({"--consistency", "all", "get", "key:7"}).exit_code == 0);
}

TEST_CASE("rebuild: a completed rebuild removes the kept data and is not repeated by a restart",
          "[multiprocess][rebuild]") {
  LocalCluster c;
  UpForRebuild(c, 3);
  REQUIRE(c.Run({"load", "--count", "300"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "stop-node", "3"}).exit_code == 0);
  ProcessResult r = c.Run({"cluster", "start-node", "3", "--rebuild"});
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.out, "old data is removed"));
  CHECK_FALSE(fs::exists(NodeDir(c, 3) + "/db.before-rebuild"));
  CHECK_FALSE(fs::exists(NodeDir(c, 3) + "/rebuilding"));
  // The rebuild was one start: a restart (or a node added with these args as its template)
  // must not rebuild again.
  const std::string args = ReadAll(NodeDir(c, 3) + "/args");
  CHECK_FALSE(Contains(args, "--rebuild"));
  CHECK_FALSE(Contains(args, "--seeds"));
  CHECK(ParseStatus(c.Run({"cluster", "status", "--json"}).out)[3].state == "up");
}
