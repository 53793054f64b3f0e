// `shardkv repair` brings a node that needs repair back (design.md "Needs repair"): exit 0 and
// the node serves; or, where another replica may have purged tombstones it lacks, exit 1 with
// the ranges refused, the node named and the fix (`--rebuild`). Runs the real CLI against an
// in-process cluster.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"
#include "testing/needs_repair.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

using shardkv::testing::InProcessCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;
using shardkv::testing::TempDir;

namespace {

constexpr uint64_t kCliGraceMs = 2000;

bool Has(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// `shardkv --cluster A,B,C ARGS...`, with a --dir and an empty profile of its own.
ProcessResult RepairCli(const TempDir& dir, const InProcessCluster& c,
                        std::vector<std::string> args) {
  std::ofstream(dir.Sub("empty-profile.toml")).flush();
  std::string seeds;
  for (const std::string& a : c.Addresses()) seeds += (seeds.empty() ? "" : ",") + a;
  std::vector<std::string> argv = {
      SHARDKV_CLI_PATH, "--dir", dir.Sub("cluster"), "--profile", dir.Sub("empty-profile.toml"),
      "--cluster",      seeds,   "--timeout",        "3000"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, std::chrono::seconds(120));
}

// A cluster of 3 (RF 3) whose node 3 missed deletes of `keys` until its hints expired, restarted
// without --rebuild: it needs repair. Background repair is off on node 3 (it would bring it back
// by itself); node 1's GC goes by the grace alone when `grace_alone_1`.
void MarkNode3(InProcessCluster& cluster, bool grace_alone_1,
               const std::vector<std::string>& keys) {
  cluster.TuneNodes([=](uint32_t id, shardkv::NodeOptions* o) {
    o->background_repair = id != 3;
    if (id == 1 && grace_alone_1) o->gc_waits_for_repair_for_test = false;
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  shardkv::testing::DeleteWhileAway(cluster, *client, 3, keys, kCliGraceMs);
  REQUIRE(cluster.RestartNode(3).ok());
  REQUIRE(shardkv::testing::CounterOf(*client, cluster, 3, "needs_repair") == 1);
}

}  // namespace

TEST_CASE("cli repair: brings a node that needs repair back, exit 0", "[multiprocess][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(shardkv::PlacementMode::kJump),
                           kCliGraceMs);
  const std::vector<std::string> keys = {"gone0", "gone1", "gone2"};
  MarkNode3(cluster, false, keys);
  TempDir dir;
  ProcessResult repair = RepairCli(dir, cluster, {"repair", "--json"});
  INFO(repair.Text());
  CHECK(repair.exit_code == 0);
  CHECK(Has(repair.out, "\"complete\":true"));
  CHECK(Has(repair.out, "\"still_need_repair\":[]"));
  // The three deletes it missed, to node 3 only.
  CHECK(Has(repair.out, "\"keys_streamed\":3"));
  CHECK(Has(repair.out, "\"streamed\":[{\"node\":3,\"keys\":3,"));
  auto client = shardkv::testing::MustConnect(cluster);
  CHECK(shardkv::testing::CounterOf(*client, cluster, 3, "needs_repair") == 0);
  ProcessResult status = RepairCli(dir, cluster, {"cluster", "status"});
  INFO(status.Text());
  CHECK_FALSE(Has(status.out, "needs-repair"));
}

TEST_CASE("cli repair: refuses where tombstones may be purged, says rebuild, exit 1",
          "[multiprocess][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(shardkv::PlacementMode::kJump),
                           kCliGraceMs);
  MarkNode3(cluster, true, {"gone0", "gone1", "gone2"});
  TempDir dir;
  ProcessResult repair = RepairCli(dir, cluster, {"repair"});
  INFO(repair.Text());
  CHECK(repair.exit_code == 1);
  CHECK(Has(repair.out, "failed: tokens "));
  CHECK(Has(repair.out, "node 1 collects tombstones by the grace alone"));
  CHECK(Has(repair.out, "node 3 still needs repair"));
  CHECK(Has(repair.out, "'shardkv cluster start-node 3 --rebuild'"));
  CHECK(Has(repair.out, "some range could not be repaired"));
  auto client = shardkv::testing::MustConnect(cluster);
  CHECK(shardkv::testing::CounterOf(*client, cluster, 3, "needs_repair") == 1);
}
