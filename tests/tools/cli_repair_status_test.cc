// `shardkv cluster status` shows a node that needs repair (design.md "Needs repair"): state
// needs-repair with the reason and the fix while it answers, and, judged from the mark of the node
// that set it, needs_repair while it is down. Runs the real CLI against
// an in-process cluster.
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

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// `shardkv --cluster A,B,C cluster status ARGS...`, with a --dir and an empty profile of its own.
ProcessResult Status(const TempDir& dir, const InProcessCluster& c, std::vector<std::string> args) {
  std::ofstream(dir.Sub("empty-profile.toml")).flush();
  std::string seeds;
  for (const std::string& a : c.Addresses()) seeds += (seeds.empty() ? "" : ",") + a;
  std::vector<std::string> argv = {
      SHARDKV_CLI_PATH, "--dir", dir.Sub("cluster"), "--profile", dir.Sub("empty-profile.toml"),
      "--cluster",      seeds,   "--timeout",        "3000",      "cluster",
      "status"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, std::chrono::seconds(60));
}

// The JSON object of node `id` in `cluster status --json` (the nodes hold no nested objects).
std::string NodeJson(const std::string& json, uint32_t id) {
  const size_t at = json.find("{\"id\":" + std::to_string(id) + ",");
  if (at == std::string::npos) return "";
  return json.substr(at, json.find('}', at) - at + 1);
}

}  // namespace

TEST_CASE("cli status: a node that needs repair is shown, up or down", "[multiprocess][repair]") {
  constexpr uint64_t kGraceMs = 2000;
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas(), kGraceMs);
  // Node 3's background repair would bring it back (its catch-up) while status is read.
  cluster.TuneNodes([](uint32_t id, shardkv::NodeOptions* o) { o->background_repair = id != 3; });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  shardkv::testing::DeleteWhileAway(cluster, *client, 3, {"gone0", "gone1", "gone2"}, kGraceMs);
  TempDir dir;
  // Its replicas keep the tombstones for it (design.md "Tombstones and GC"), and say so.
  CHECK(shardkv::testing::Eventually(
      [&] { return shardkv::testing::CounterOf(*client, cluster, 1, "gc_blocked_ranges") > 0; }));

  // Down: the marking node's mark says it.
  ProcessResult down = Status(dir, cluster, {"--json"});
  INFO(down.Text());
  CHECK(down.exit_code == 0);
  CHECK(Contains(NodeJson(down.out, 1), "\"gc_blocked_by\":[3]"));
  CHECK_FALSE(Contains(NodeJson(down.out, 1), "\"gc_blocked_ranges\":0"));
  ProcessResult down_text = Status(dir, cluster, {});
  INFO(down_text.Text());
  CHECK(Contains(down_text.out, "gc: node 1 tombstone GC blocked on "));
  CHECK(Contains(down_text.out, "(waiting for node 3: repair it, or remove it)"));
  const std::string down3 = NodeJson(down.out, 3);
  CHECK(Contains(down3, "\"state\":\"down\""));
  CHECK(Contains(down3, "\"needs_repair\":true"));
  CHECK(Contains(down3, "start it, then run 'shardkv repair --node 3'"));
  CHECK(Contains(down3, "start-node 3 --rebuild"));
  CHECK(Contains(down3, "dropped hinted writes for it that outlived the tombstone grace"));
  CHECK(Contains(NodeJson(down.out, 1), "\"needs_repair\":false"));

  // Up again: it knows, and refuses reads; status says so in both forms.
  REQUIRE(cluster.RestartNode(3).ok());
  ProcessResult up = Status(dir, cluster, {"--json"});
  INFO(up.Text());
  CHECK(up.exit_code == 0);
  const std::string up3 = NodeJson(up.out, 3);
  CHECK(Contains(up3, "\"state\":\"needs-repair\""));
  CHECK(Contains(up3, "\"needs_repair\":true"));
  CHECK(Contains(up3, "tombstone grace"));
  CHECK(Contains(NodeJson(up.out, 2), "\"state\":\"up\""));
  ProcessResult text = Status(dir, cluster, {});
  INFO(text.Text());
  CHECK(text.exit_code == 0);
  CHECK(Contains(text.out, "needs-repair"));
  CHECK(Contains(text.out, "node 3: needs-repair: node "));
  // The fix: a repair, or for a lost disk (or a range repair refuses) the rebuild.
  CHECK(Contains(text.out, "run 'shardkv repair --node 3' to bring it back"));
  CHECK(Contains(text.out, "'shardkv cluster start-node 3 --rebuild'"));
}

TEST_CASE("cli status: each node's background repair and its last full pass",
          "[multiprocess][repair]") {
  InProcessCluster cluster(3, shardkv::testing::ThreeReplicas());
  cluster.TuneNodes([](uint32_t id, shardkv::NodeOptions* o) {
    o->repair_period_ms = 1000;
    o->background_repair = id != 3;
  });
  REQUIRE(cluster.Start().ok());
  auto client = shardkv::testing::MustConnect(cluster);
  // Nodes 1 and 2 complete a full pass within a period or two.
  REQUIRE(shardkv::testing::Eventually([&] {
    for (uint32_t id : {1u, 2u}) {
      if (shardkv::testing::CounterOf(*client, cluster, id, "repair_last_full_ms") <= 0) {
        return false;
      }
    }
    return true;
  }));
  TempDir dir;
  ProcessResult json = Status(dir, cluster, {"--json"});
  INFO(json.Text());
  CHECK(json.exit_code == 0);
  const std::string one = NodeJson(json.out, 1);
  CHECK(Contains(one, "\"background_repair\":true"));
  CHECK(Contains(one, "\"repair_period_ms\":1000"));
  CHECK_FALSE(Contains(one, "\"last_full_repair_ms\":0"));
  CHECK(Contains(one, "\"last_full_repair_ms\":1"));  // Unix ms: 1.7e12 and on
  const std::string three = NodeJson(json.out, 3);
  CHECK(Contains(three, "\"background_repair\":false"));
  CHECK(Contains(three, "\"last_full_repair_ms\":0"));
  ProcessResult text = Status(dir, cluster, {});
  INFO(text.Text());
  CHECK(text.exit_code == 0);
  CHECK(Contains(text.out, "repair: node 1 last full repair "));
  CHECK(Contains(text.out, " ago (period 1 s)"));
  CHECK(Contains(text.out, "node 3 background repair off"));
}
