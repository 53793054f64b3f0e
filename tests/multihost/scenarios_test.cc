// Multi-host scenarios without a membership change in flight (design.md "Multi-host test bed"):
// forming across hosts and a join (issue 11's "Done means"), isolation, a majority/minority
// split with clients on both sides, and clock skew. The change scenarios are in
// scenarios_change_test.cc.
//
// Expected failures (none at present): a scenario that is known to break is tagged [!mayfail]
// and prints "EXPECTED FAILURE (issue 12): ..." when its checks fail:
// they are not deterministic (a run may hold), so CTest's WILL_FAIL, which fails a passing run,
// does not fit. Catch still reports each failed CHECK, so the failure stays visible in the log.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <thread>

#include "multihost/scenario_macros.h"
#include "net/rpc_client.h"
#include "shardkv/secret_file.h"

namespace shardkv::multihost {
namespace {

using namespace std::chrono_literals;

// Issue 12: "after a heal the cluster is fully available within 5 s". Prints how long after the
// heal the last failed operation was invoked (the workloads run on for 10 s past it). Checked
// against a looser bound than the promise, because these machines are shared and noisy: the
// figure, not the bound, is what the closing notes report.
void ReportAvailabilityAfterHeal(Scenario& s, int64_t healed_us) {
  auto after = FailedInvokedAfter(s.histories(), healed_us);
  REQUIRE(after.ok());
  std::printf(
      "after the heal: %llu ops invoked, %llu failed, the last failed one invoked %.2f s "
      "after the heal\n",
      static_cast<unsigned long long>(after->ops), static_cast<unsigned long long>(after->failed),
      after->last_failed_after_us < 0 ? 0.0 : after->last_failed_after_us / 1e6);
  CHECK(after->ops > 0);
  CHECK(after->last_failed_after_us < 15'000'000);
}

TEST_CASE("three hosts: cluster init, put and get from the root namespace, join a fourth",
          "[multihost]") {
  MULTIHOST_SCENARIO(s, "init-join", 4);
  REQUIRE(s.StartNodes(3).ok());
  const Status formed = s.Form(3);
  INFO(formed.ToString());
  REQUIRE(formed.ok());
  Command put = s.bed().Cli(0, s.bed().Addresses({1, 2, 3}), {"put", "bed-key", "bed-value"});
  INFO(put.out);
  REQUIRE(put.exit_code == 0);
  Command get = s.bed().Cli(0, s.bed().Addresses({2}), {"get", "bed-key"});
  INFO(get.out);
  REQUIRE(get.exit_code == 0);
  CHECK(get.out.find("bed-value") != std::string::npos);

  REQUIRE(s.bed().StartNode(4).ok());
  Command join = s.Cli(0, {1, 2, 3}, {"cluster", "join", s.bed().Address(4)});
  INFO(join.out);
  REQUIRE(join.exit_code == 0);
  auto state = s.FinishChange(Scale(60s), 0);
  INFO(state.status().ToString());
  REQUIRE(state.ok());
  CHECK(*state == "done");
  REQUIRE(s.Settle(30s).ok());
  // The fourth node answers for the key, and the map lists four nodes.
  Command again = s.bed().Cli(0, s.bed().Addresses({4}), {"get", "bed-key"});
  INFO(again.out);
  CHECK(again.exit_code == 0);
  CHECK(again.out.find("bed-value") != std::string::npos);
  Command status = s.bed().Cli(0, s.bed().Addresses({1}), {"cluster", "status", "--json"});
  INFO(status.out);
  CHECK(status.exit_code == 0);
  CHECK(status.out.find(s.bed().Address(4)) != std::string::npos);
  CHECK(s.Teardown().empty());
}

TEST_CASE("isolate one node of three", "[multihost]") {
  MULTIHOST_SCENARIO(s, "isolate-one", 3);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.Form(3).ok());
  const auto fault = Scale(6s);
  s.StartSamplers(fault + 20s);
  s.StartWorkload({.prefix = "A", .duration = fault + 10s});
  REQUIRE(s.WaitForOps(100, 20s));  // the workload runs before the fault
  REQUIRE(s.nemesis().Isolate(3).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  const int64_t healed = MonotonicMicros();
  s.WaitAll(60s);
  ReportAvailabilityAfterHeal(s, healed);
  REQUIRE(s.Settle(60s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

TEST_CASE("majority/minority split with clients on both sides", "[multihost]") {
  MULTIHOST_SCENARIO(s, "split-2-3", 5);
  REQUIRE(s.StartNodes(5).ok());
  REQUIRE(s.Form(5).ok());
  const auto fault = Scale(8s);
  s.StartSamplers(fault + 25s);
  // One workload inside each side (its clients reach only that side), one in the root
  // namespace, which reaches both.
  s.StartWorkload({.host = 1,
                   .prefix = "A",
                   .read_prefixes = {"B"},
                   .seed_hosts = {1, 2},
                   .duration = fault + 10s,
                   .seed = 1});
  s.StartWorkload({.host = 3,
                   .prefix = "B",
                   .read_prefixes = {"A"},
                   .seed_hosts = {3, 4, 5},
                   .duration = fault + 10s,
                   .seed = 2});
  s.StartWorkload({.host = 0,
                   .prefix = "R",
                   .read_prefixes = {"A", "B"},
                   .writers = 1,
                   .readers = 1,
                   .duration = fault + 10s,
                   .seed = 3});
  REQUIRE(s.WaitForOps(200, 20s));
  REQUIRE(s.nemesis().Partition({{1, 2}, {3, 4, 5}}).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  const int64_t healed = MonotonicMicros();
  s.WaitAll(60s);
  ReportAvailabilityAfterHeal(s, healed);
  REQUIRE(s.Settle(90s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

// The other nemeses: latency into node 2 (the delaying proxy, set before the traffic it slows),
// loss on node 3, then a bridge (1 sees 2 and 3, which do not see each other), then heal.
TEST_CASE("latency, loss and a bridge", "[multihost]") {
  MULTIHOST_SCENARIO(s, "latency-loss-bridge", 3);
  REQUIRE(s.StartNodes(3).ok());
  REQUIRE(s.nemesis().Latency(2, 30ms).ok());
  REQUIRE(s.Form(3).ok());
  const auto fault = Scale(5s);
  s.StartSamplers(2 * fault + 20s);
  s.StartWorkload({.prefix = "L", .duration = 2 * fault + 3s});
  REQUIRE(s.WaitForOps(100, 20s));
  REQUIRE(s.nemesis().Loss(3, 0.05).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Bridge(1, {2}, {3}).ok());
  std::this_thread::sleep_for(fault);  // the fault's window
  REQUIRE(s.nemesis().Heal().ok());
  s.WaitAll(60s);
  REQUIRE(s.Settle(60s).ok());
  const Figures f = s.Check();
  CHECK(s.Report(f, ""));
  CHECK(s.Teardown().empty());
}

// Issue 12 section 4, clock skew: node 3's wall clock `skew_ms` off (libfaketime, monotonic
// untouched). Node 3 coordinates writes and is SIGKILLed at once, three times, while the same
// keys are written through the others, and restarted 300 ms later, as in the findings' e4 (lost
// writes with a clock 1 s fast, A2): writers without a session (a new client per write) on few
// keys, so that a key is written again within a second, while node 3 is down, of a write node 3
// stamped in its future (or past). Promised: nothing lost, stale or resurrected, and the
// operations on keys node 3 does not hold keep succeeding. Four nodes at RF 3, so that such keys
// exist (a quarter of them) and the others keep a write quorum while node 3 is down.
// A skewed node sends its client requests on (design.md "Clock offsets") before it judges their
// deadlines: its own clock cannot tell whether a client's deadline passed (one 1.25 s ahead
// dropped every fresh request as late, unserved). Sends node 3, once it says it is skewed, 20 gets
// with the deadline a client with a right clock gives them (its now + 800 ms, which a node 1 s or
// more ahead sees as past). Each must be answered, and node 3 must count them sent on, none late.
void CheckSentOn(Scenario& s, const std::string& name, const ClusterMap& map) {
  std::unique_ptr<Admin> admin = s.MakeAdmin();
  REQUIRE(admin != nullptr);
  auto counter = [&](const char* c) -> std::optional<int64_t> {
    StatusOr<NodeStatsSnapshot> st = admin->NodeStats(s.bed().Address(3));
    if (!st.ok()) return std::nullopt;
    auto it = st->counters.find(c);
    return it == st->counters.end() ? int64_t{0} : it->second;
  };
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (counter("clock_skewed").value_or(0) != 1 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(200ms);  // polled, bounded by `until`
  }
  REQUIRE(counter("clock_skewed").value_or(0) == 1);
  const int64_t sent_before = counter("requests_sent_on").value_or(-1);
  const int64_t late_before = counter("requests_late").value_or(-1);
  const char* secret_file = std::getenv("SHARDKV_AUTH_SECRET_FILE");
  REQUIRE(secret_file != nullptr);
  StatusOr<SecretFile> secret = LoadSecretFile(secret_file, "the bed's secret");
  REQUIRE(secret.ok());
  net::RpcClientOptions options;
  options.auth_secret = secret->secret;
  net::RpcClient rpc(s.bed().Address(3), options);
  int answered = 0, ahead = 0;
  std::string last_error;
  for (int i = 0; i < 20; ++i) {
    const std::string key = "probe" + std::to_string(i);
    net::Request r;
    r.cluster_id = map.cluster_id();
    r.epoch = map.epoch();
    r.deadline_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::system_clock::now().time_since_epoch())
                                              .count() +
                                          800);
    r.body = net::GetRequest{map.TokenOf(key), key};
    StatusOr<net::Response> reply = rpc.CallSync(std::move(r), 2s);
    if (reply.ok() && reply->ok()) {
      ++answered;
      // The relayed reply carries the coordinator's HLC timestamp (ms << 16), not node 3's: a
      // client relaying a skewed clock's timestamp is refused by every healthy node after it.
      const int64_t ts_ms = static_cast<int64_t>(reply->ts >> 16);
      const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count();
      if (ts_ms > now_ms + 500) ++ahead;
    } else {
      last_error = reply.ok() ? reply->status().ToString() : reply.status().ToString();
    }
  }
  const int64_t sent = counter("requests_sent_on").value_or(-1) - sent_before;
  const int64_t late = counter("requests_late").value_or(-1) - late_before;
  std::printf(
      "%s: 20 gets to node 3 (skewed) with an 800 ms deadline: %d answered, %lld sent on, "
      "%lld dropped as late, %d replies stamped ahead of this clock%s%s\n",
      name.c_str(), answered, static_cast<long long>(sent), static_cast<long long>(late), ahead,
      last_error.empty() ? "" : "; last error: ", last_error.c_str());
  CHECK(answered == 20);
  CHECK(ahead == 0);
  CHECK(sent >= 20);
  CHECK(late == 0);
}

void SkewScenario(const std::string& name, int skew_ms, const std::string& expected_failure) {
  MULTIHOST_SCENARIO(s, name, 4);
  REQUIRE(s.StartNodes(4, {0, 0, skew_ms, 0}).ok());
  // The nemesis works: node 3's log is stamped skew_ms off the real clock (logging and the
  // file's modification stamp cost < 300 ms).
  const StatusOr<int64_t> observed = s.bed().ObservedSkewMs(3);
  REQUIRE(observed.ok());
  std::printf("%s: node 3's clock observed %+lld ms off\n", name.c_str(),
              static_cast<long long>(*observed));
  CHECK(std::abs(*observed - skew_ms) < 300);
  REQUIRE(s.Form(4).ok());
  const auto window = Scale(15s);
  s.StartSamplers(window + 30s);
  // A client gives each attempt a quarter of its timeout (max_retries 3) and sends the
  // attempt's deadline in wall-clock ms; a node ahead by more than that share sees it past and
  // drops the op unserved (KvService's late drop), so node 3 would coordinate nothing (seen with
  // 2 s + the skew: every op it got was retried elsewhere at once). So each attempt gets the
  // skew plus 1 s, and node 3 coordinates as a node with a right clock would.
  const auto timeout = skew_ms > 0 ? 4 * (std::chrono::milliseconds(skew_ms) + 1000ms) : 2000ms;
  s.StartWorkload(
      {.prefix = "S", .read_prefixes = {"F"}, .duration = window, .seed = 1, .timeout = timeout});
  s.StartWorkload({.prefix = "F",
                   .writers = 2,
                   .readers = 0,
                   .keys = 4,
                   .duration = window,
                   .seed = 2,
                   .fresh_clients = true,
                   .timeout = timeout});
  REQUIRE(s.WaitForOps(100, 20s));
  std::unique_ptr<Admin> admin = s.MakeAdmin();
  REQUIRE(admin != nullptr);
  int64_t received = 0;
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(window / 5);  // the skewed node coordinates a while (a window)
    // The client writes node 3 answered since its start (its counters restart with it), errors
    // and late drops included; its client errors exclude late drops (Timeout). The premise is
    // that it coordinates some.
    if (StatusOr<NodeStatsSnapshot> st = admin->NodeStats(s.bed().Address(3)); st.ok()) {
      auto c = [&st](const char* counter) {
        auto it = st->counters.find(counter);
        return it == st->counters.end() ? int64_t{0} : it->second;
      };
      received += c("ops.put") + c("ops.delete");
      std::printf(
          "%s: node 3 before kill %d: client puts %lld, deletes %lld, gets %lld, client "
          "errors %lld, quorum failures %lld, hints written %lld, re-stamped %lld\n",
          name.c_str(), round + 1, static_cast<long long>(c("ops.put")),
          static_cast<long long>(c("ops.delete")), static_cast<long long>(c("ops.get")),
          static_cast<long long>(c("client_errors")), static_cast<long long>(c("quorum_failures")),
          static_cast<long long>(c("hints_written")),
          static_cast<long long>(c("writes_restamped")));
    } else {
      std::printf("%s: node 3's stats: %s\n", name.c_str(), st.status().ToString().c_str());
    }
    s.nemesis().Kill(3);
    std::this_thread::sleep_for(300ms);  // writes go to the others while node 3 is down
    REQUIRE(s.nemesis().Restart(3, skew_ms).ok());
  }
  s.WaitAll(60s);
  REQUIRE(s.Settle(60s).ok());
  CHECK(received > 0);
  // No change ran, so the formation's placement says which keys node 3 holds.
  const StatusOr<ClusterMap> map = admin->NewestMap();
  REQUIRE(map.ok());
  auto holds = [&map](const std::string& key) {
    const std::vector<uint32_t> replicas = map->Replicas(map->TokenOf(key));
    return std::find(replicas.begin(), replicas.end(), 3u) != replicas.end();
  };
  CheckSentOn(s, name, *map);
  Figures f = s.Check();
  const Figures away = s.Outcomes([&](const std::string& key) { return !holds(key); });
  const Figures on3 = s.Outcomes(holds);
  std::printf("%s: keys node 3 holds: %s\n%s: keys node 3 does not hold: %s\n", name.c_str(),
              on3.Line().c_str(), name.c_str(), away.Line().c_str());
  CHECK(away.ops > 0);
  f.required_failed = away.failed + away.indeterminate;
  if (f.required_failed != 0) {
    f.violations.push_back(std::to_string(f.required_failed) +
                           " operations on keys node 3 does not hold failed");
  }
  CHECK(s.Report(f, expected_failure));
  CHECK(s.Teardown().empty());
}

// Before clock offsets were measured (2026-12-02, stop 21), a node ahead stored the writes it
// coordinated although the others refused their timestamps; reads merged its copy, and its hints
// replayed it: stale reads and resurrected deletes at +1 s, +3 s and +10 s. Now it measures its
// clock against the others' at start, at adoption and every gossip round, and while it is off a
// majority's it sends its client requests on (design.md "Clock offsets"). Behind: the same.
TEST_CASE("a node 1 s ahead", "[multihost]") { SkewScenario("skew+1s", 1000, ""); }
// ±3 s runs only at full length: ±1 s and ±10 s already put one offset inside and one far
// outside the guard's 500 ms limit on each side, and the pair costs 37 s of a CI run budgeted at
// 45 minutes. Said loudly, so a short run's log shows what it left out.
void LongOnlySkewScenario(const std::string& name, int skew_ms) {
  if (Scale(std::chrono::milliseconds(1)).count() == 1) {
    std::printf("%s: not run (only with SHARDKV_LONG=1; +-1 s and +-10 s ran)\n", name.c_str());
    return;
  }
  SkewScenario(name, skew_ms, "");
}
TEST_CASE("a node 3 s ahead", "[multihost]") { LongOnlySkewScenario("skew+3s", 3000); }
TEST_CASE("a node 10 s ahead", "[multihost]") { SkewScenario("skew+10s", 10000, ""); }
TEST_CASE("a node 1 s behind", "[multihost]") { SkewScenario("skew-1s", -1000, ""); }
TEST_CASE("a node 3 s behind", "[multihost]") { LongOnlySkewScenario("skew-3s", -3000); }
TEST_CASE("a node 10 s behind", "[multihost]") { SkewScenario("skew-10s", -10000, ""); }

}  // namespace
}  // namespace shardkv::multihost
