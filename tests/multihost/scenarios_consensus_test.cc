// Multi-host scenario of the map consensus's membership (design.md "Consensus"): a join onto a
// node whose disk fills mid-stream (its Raft log store fails), the disk grown and the change
// finished, then two of the original nodes killed and removed one after the other. Both removals
// must succeed, and the voters must equal the members after each step: the node whose Raft store
// failed takes part again once its disk has room, and no voter change stays stuck.
#include <sys/mount.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "multihost/scenario_macros.h"
#include "shardkv/stats.h"

namespace shardkv::multihost {
namespace {

using namespace std::chrono_literals;

// A tmpfs of `mib` MiB mounted at a node's data directory before the node starts (the node's
// `ip netns exec` mount namespace receives it), grown in place by a remount, lazily unmounted at
// the end. Needs root, as the bed does.
class DataDisk {
 public:
  DataDisk(const std::string& path, int mib) : path_(path) {
    std::filesystem::create_directories(path_);
    const std::string size = "size=" + std::to_string(mib) + "m";
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, size.c_str()) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~DataDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  DataDisk(const DataDisk&) = delete;
  DataDisk& operator=(const DataDisk&) = delete;

  bool ok() const { return mounted_; }
  const std::string& error() const { return error_; }
  bool Grow(int mib) {
    const std::string size = "size=" + std::to_string(mib) + "m";
    return ::mount("tmpfs", path_.c_str(), "tmpfs", MS_REMOUNT, size.c_str()) == 0;
  }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string error_;
};

// The first line of node `host`'s log that holds every one of `words` (case-insensitive).
std::string LogLine(Scenario& s, int host, const std::vector<std::string>& words) {
  std::ifstream log(s.bed().dir() + "/node" + std::to_string(host) + ".log");
  std::string line;
  while (std::getline(log, line)) {
    std::string lower = line;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    bool all = true;
    for (const std::string& w : words) all = all && lower.find(w) != std::string::npos;
    if (all) return line;
  }
  return "";
}

// The voters the consensus leader among `hosts` reports (its stats, through the Admin API),
// "" when none of them leads.
std::string LeaderVoters(Scenario& s, const std::vector<int>& hosts) {
  std::unique_ptr<Admin> admin = s.MakeAdmin();
  if (admin == nullptr) return "";
  for (int h : hosts) {
    StatusOr<NodeStatsSnapshot> st = admin->NodeStats(s.bed().Address(h));
    if (!st.ok()) continue;
    auto leads = st->counters.find(std::string(stats::consensus_is_leader));
    if (leads == st->counters.end() || leads->second != 1) continue;
    auto voters = st->info.find(std::string(stats::consensus_voter_ids));
    return voters == st->info.end() ? "(not reported)" : voters->second;
  }
  return "";
}

// Polls until the leader's voters are `expected` (the members); prints what it saw.
bool VotersBecome(Scenario& s, const std::vector<int>& hosts, const std::string& expected,
                  std::chrono::milliseconds limit) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string seen;
  while (std::chrono::steady_clock::now() - t0 < limit) {
    seen = LeaderVoters(s, hosts);
    if (seen == expected) break;
    std::this_thread::sleep_for(250ms);  // polling interval, bounded by `limit`
  }
  std::printf("voters: %s (want %s) after %.1f s\n", seen.empty() ? "no leader" : seen.c_str(),
              expected.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return seen == expected;
}

// Kills node `victim` and removes it through the nodes in `rest`; the change must finish.
void KillAndRemove(Scenario& s, int victim, const std::vector<int>& rest) {
  s.nemesis().Kill(victim);
  Command removed = s.Cli(0, rest, {"cluster", "remove-node", std::to_string(victim)});
  std::printf("remove-node %d: exit %d: %s\n", victim, removed.exit_code, removed.out.c_str());
  CHECK(removed.exit_code == 0);
  auto state = s.FinishChange(60s);
  std::printf("removal of node %d ended: %s\n", victim,
              state.ok() ? state->c_str() : state.status().ToString().c_str());
  CHECK((state.ok() && *state == "done"));
}

}  // namespace

TEST_CASE("a join onto a disk that fills, then two original nodes killed and removed",
          "[multihost]") {
  MULTIHOST_SCENARIO(s, "disk-full-join-then-removals", 4);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  REQUIRE(s.Load(2500, 8000)
              .ok());  // 20 MB: node 4's share (13 MB) and RocksDB's files do not fit on 16 MiB
  DataDisk disk(s.bed().dir() + "/n4", 16);
  if (!disk.ok()) {
    WARN("MULTIHOST SKIPPED: cannot mount a tmpfs: " << disk.error());
    std::printf("MULTIHOST SKIPPED: cannot mount a tmpfs: %s\n", disk.error().c_str());
    return;
  }
  REQUIRE(s.bed().StartNode(4).ok());
  s.StartSamplers(240s);
  // Clients of node 3, which stays throughout (a node on a full disk fails the writes it
  // coordinates; that is storage health's business, not this scenario's).
  s.StartWorkload({.prefix = "J", .seed_hosts = {3}, .duration = 60s});
  REQUIRE(s.WaitForOps(100, 20s));
  {
    Command join = s.Cli(0, {1, 2, 3}, {"cluster", "join", s.bed().Address(4)});
    INFO(join.out);
    REQUIRE(join.exit_code == 0);
  }

  // Node 4's disk fills mid-stream; its Raft log store fails with it (the commits of the change
  // append to every member's log).
  std::string full;
  for (auto t0 = std::chrono::steady_clock::now();
       full.empty() && std::chrono::steady_clock::now() - t0 < 90s;) {
    std::this_thread::sleep_for(500ms);  // polling interval, bounded above
    full = LogLine(s, 4, {"shardkv raft:", "no space left"});
  }
  std::printf("node 4's Raft store: %s\n", full.empty() ? "(never full)" : full.c_str());
  REQUIRE_FALSE(full.empty());
  // While its store fails, `cluster status` names node 4 as out of the consensus, with the error
  // (read from the live nodes' stats, not made up by the CLI).
  std::string shown;
  for (auto t0 = std::chrono::steady_clock::now();
       shown.empty() && std::chrono::steady_clock::now() - t0 < 30s;) {
    Command status =
        s.bed().Cli(0, s.bed().Addresses({1, 2, 3, 4}), {"cluster", "status", "--json"});
    if (status.out.find("\"store_errors\":{\"4\":") != std::string::npos) shown = status.out;
    if (shown.empty()) std::this_thread::sleep_for(500ms);  // polling interval, bounded above
  }
  std::printf("status while node 4's store fails: %s\n",
              shown.empty() ? "(node 4's store error never shown)" : shown.c_str());
  CHECK_FALSE(shown.empty());

  // The operator grows the disk and finishes the change (resuming it if it failed meanwhile).
  REQUIRE(disk.Grow(1024));
  auto joined = s.FinishChange(120s, 4);
  std::printf("join ended: %s\n",
              joined.ok() ? joined->c_str() : joined.status().ToString().c_str());
  REQUIRE((joined.ok() && *joined == "done"));
  // Node 4 takes part in consensus again, without a restart, and becomes a voter: the voters
  // are the members.
  CHECK(VotersBecome(s, {1, 2, 3, 4}, "1,2,3,4", 60s));
  const std::string again = LogLine(s, 4, {"shardkv raft:", "takes part in consensus again"});
  std::printf("node 4's Raft server: %s\n",
              again.empty() ? "(never took part again)" : again.c_str());
  CHECK_FALSE(again.empty());

  // Two original nodes killed and removed, one after the other.
  s.StartWorkload({.prefix = "R", .seed_hosts = {3}, .duration = 40s, .seed = 2});
  KillAndRemove(s, 1, {2, 3, 4});
  CHECK(VotersBecome(s, {2, 3, 4}, "2,3,4", 60s));
  KillAndRemove(s, 2, {3, 4});
  CHECK(VotersBecome(s, {3, 4}, "3,4", 60s));

  Command status = s.bed().Cli(0, s.bed().Addresses({3, 4}), {"cluster", "status", "--json"});
  INFO(status.out);
  CHECK(status.out.find("\"voters\":[3,4],\"members\":[3,4]") != std::string::npos);
  CHECK(status.out.find("\"voters_as_desired\":true") != std::string::npos);
  s.WaitAll(90s);
  const Status settled = s.Settle(60s);
  if (!settled.ok()) std::printf("not settled: %s\n", settled.ToString().c_str());
  const Figures f = s.Check();
  const bool held = s.Report(f, "");
  CHECK(settled.ok());
  CHECK(held);
  CHECK(s.Teardown().empty());
}

}  // namespace shardkv::multihost
