// Rebalance fault drills on real shardkv-node processes driven through the shardkv CLI
// (design.md "Rebalancing: the transition protocol" and "Testing", the fault tests): a node
// added and removed under a running history checker, kill -9 of the destination, of a source and
// of the driver mid-stream, a replica SIGSTOPped across a whole change, cancel, and removal of a
// dead node.
//
// Every wait is a poll with a deadline, and every CLI run has one too (a hung `rebalance watch`
// fails the drill instead of hanging ctest). Key counts come from SHARDKV_TEST_KEYS. A drill that
// fails keeps a copy of its cluster directory (node logs and data) and prints where, with the
// tail of every node.log.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener that notices failed assertions
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "net/rpc_client.h"
#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "testing/history_checker.h"
#include "testing/temp_dir.h"

extern char** environ;

using shardkv::testing::TempDir;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// Failed assertions so far in this process: a drill compares the count at its start and end to
// decide whether to keep its directory for inspection.
std::atomic<int> g_failed_assertions{0};

class FailureCounter : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) ++g_failed_assertions;
    return true;
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(FailureCounter)

namespace {

constexpr const char* kSeedsNote = "fixed seeds: load --seed 1, history checker seed 7";

int TestKeys(int fallback) {
  const char* env = std::getenv("SHARDKV_TEST_KEYS");
  return env && *env ? std::atoi(env) : fallback;
}

// ---- Processes with a deadline ----------------------------------------------------------------

struct Proc {
  int exit_code = -1;  // -1: not started, killed by a signal, or timed out
  bool timed_out = false;
  std::string out;
  std::string err;
  std::string Text() const {
    return "exit " + std::to_string(exit_code) + (timed_out ? " (timed out, killed)" : "") +
           "\n--- stdout\n" + out + "--- stderr\n" + err;
  }
};

std::string TempFile(const char* tag) {
  const char* base = std::getenv("TMPDIR");
  std::string path =
      std::string(base && *base ? base : "/tmp") + "/shardkv_drill_" + tag + "_XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd >= 0) close(fd);
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs argv (no shell) with stdin from /dev/null; SIGKILLs it if it runs past `limit`.
Proc RunFor(const std::vector<std::string>& argv, milliseconds limit) {
  Proc result;
  const std::string out_path = TempFile("out");
  const std::string err_path = TempFile("err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_TRUNC,
                                   0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_TRUNC,
                                   0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc == 0) {
    const auto deadline = Clock::now() + limit;
    int status = 0;
    bool reaped = false;
    for (;;) {
      const pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        reaped = true;
        break;
      }
      if (r < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) {
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        result.timed_out = true;
        break;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    if (reaped && WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  }
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return result;
}

// Polls `done` every `every` until it holds or `limit` passes; returns whether it held.
bool PollUntil(const std::function<bool()>& done, milliseconds limit,
               milliseconds every = milliseconds(100)) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

// ---- Flat JSON --------------------------------------------------------------------------------

// The raw value of the first `"key":` in `json` (strings unquoted, minimal unescaping); nullopt
// if absent. Enough for the CLI's top-level fields, which all precede the nested arrays.
std::optional<std::string> JsonRaw(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return std::nullopt;
  size_t i = at + needle.size();
  while (i < json.size() && json[i] == ' ') ++i;
  if (i < json.size() && json[i] == '"') {
    std::string s;
    for (++i; i < json.size() && json[i] != '"'; ++i) {
      if (json[i] == '\\' && i + 1 < json.size()) ++i;
      s += json[i];
    }
    return s;
  }
  size_t end = i;
  while (end < json.size() && json[end] != ',' && json[end] != '}' && json[end] != ']') ++end;
  return json.substr(i, end - i);
}

double JsonNumber(const std::string& json, const std::string& key) {
  auto raw = JsonRaw(json, key);
  if (!raw || raw->empty() || *raw == "null") return std::nan("");
  return std::strtod(raw->c_str(), nullptr);
}

std::string JsonString(const std::string& json, const std::string& key) {
  return JsonRaw(json, key).value_or("");
}

// How often `"key":"` (a non-null string value) occurs anywhere in `json`.
int CountStringField(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  int n = 0;
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// `rebalance status --json`, parsed.
struct RebalanceStatus {
  Proc proc;
  std::string state, kind, error;
  double node_id = 0, planned_copies = 0, moved_copies = 0, total_copies = 0;
  double remapped_keys = 0, ideal_fraction = 0, moved_fraction = 0, client_errors = 0;
  double resumed_tasks = 0, epoch = 0, driver = 0;
  bool ok() const { return proc.exit_code == 0 && !state.empty(); }
  bool Ended() const { return state == "done" || state == "failed" || state == "cancelled"; }
};

RebalanceStatus ParseStatus(Proc p) {
  RebalanceStatus s;
  const std::string& j = p.out;
  s.state = JsonString(j, "state");
  s.kind = JsonString(j, "kind");
  s.error = JsonString(j, "error");
  s.node_id = JsonNumber(j, "node_id");
  s.planned_copies = JsonNumber(j, "planned_copies");
  s.moved_copies = JsonNumber(j, "moved_copies");
  s.total_copies = JsonNumber(j, "total_copies");
  s.remapped_keys = JsonNumber(j, "remapped_keys");
  s.ideal_fraction = JsonNumber(j, "ideal_fraction");
  s.moved_fraction = JsonNumber(j, "moved_fraction");
  s.client_errors = JsonNumber(j, "client_errors");
  s.resumed_tasks = JsonNumber(j, "resumed_tasks");
  s.epoch = JsonNumber(j, "epoch");
  s.driver = JsonNumber(j, "driver");
  s.proc = std::move(p);
  return s;
}

// ---- The cluster under test -------------------------------------------------------------------

// A cluster directory driven through `shardkv --dir D`. On destruction: `cluster down`, then
// SIGKILL of any node process of this directory still running, then (if an assertion of this
// drill failed) a copy of the directory is kept and the node logs' tails are printed.
class Drill {
 public:
  Drill() : failures_at_start_(g_failed_assertions.load()) {
    // `cluster up` / `add-node` launch the node binary of this build, not one from PATH.
    setenv("SHARDKV_NODE_BIN", SHARDKV_NODE_PATH, 1);
    REQUIRE(!dir_.path().empty());
  }
  ~Drill() {
    RunFor({SHARDKV_CLI_PATH, "--dir", dir_.path(), "cluster", "down", "--wait", "10"},
           seconds(60));
    KillLeftovers();
    if (g_failed_assertions.load() != failures_at_start_ || std::uncaught_exceptions() > 0) {
      KeepForInspection();
    }
  }
  Drill(const Drill&) = delete;
  Drill& operator=(const Drill&) = delete;

  const std::string& dir() const { return dir_.path(); }

  Proc Cli(std::vector<std::string> args, milliseconds limit = seconds(180)) const {
    std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--dir", dir_.path()};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunFor(argv, limit);
  }
  // Through one node only (`--cluster ADDRESS`), not the directory.
  Proc CliVia(const std::string& address, std::vector<std::string> args,
              milliseconds limit = seconds(60)) const {
    std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--cluster", address};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunFor(argv, limit);
  }

  RebalanceStatus Status() const {
    return ParseStatus(Cli({"rebalance", "status", "--json"}, seconds(60)));
  }
  RebalanceStatus StatusVia(const std::string& address) const {
    return ParseStatus(CliVia(address, {"rebalance", "status", "--json"}));
  }
  // Polls `rebalance status` until `done` holds; returns the last status seen.
  RebalanceStatus PollStatus(const std::function<bool(const RebalanceStatus&)>& done,
                             milliseconds limit, bool* held) const {
    RebalanceStatus last;
    *held = PollUntil(
        [&] {
          last = Status();
          return last.ok() && done(last);
        },
        limit);
    return last;
  }

  std::string Address(int id) const {
    std::ifstream in(dir_.Sub("node-" + std::to_string(id) + "/port"));
    int port = 0;
    in >> port;
    return "127.0.0.1:" + std::to_string(port);
  }
  pid_t Pid(int id) const {
    std::ifstream in(dir_.Sub("node-" + std::to_string(id) + "/pid"));
    long pid = 0;
    in >> pid;
    return static_cast<pid_t>(pid);
  }

  std::string NodeLogTails(size_t lines) const {
    std::string out;
    std::error_code ec;
    std::vector<std::filesystem::path> logs;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path(), ec)) {
      if (std::filesystem::exists(e.path() / "node.log")) logs.push_back(e.path() / "node.log");
    }
    std::sort(logs.begin(), logs.end());
    for (const auto& log : logs) {
      std::vector<std::string> all;
      std::ifstream in(log);
      for (std::string line; std::getline(in, line);) all.push_back(line);
      out += "==> " + log.string() + " (last " + std::to_string(lines) + " lines)\n";
      for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
        out += all[i] + "\n";
      }
    }
    return out;
  }

 private:
  // Any node process whose command line names this directory (pid reuse cannot hit another).
  void KillLeftovers() const {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_.path(), ec)) {
      std::ifstream pid_file(e.path() / "pid");
      long pid = 0;
      if (!(pid_file >> pid) || pid <= 0) continue;
      const std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
      if (cmdline.find(dir_.path()) == std::string::npos) continue;
      kill(static_cast<pid_t>(pid), SIGCONT);
      kill(static_cast<pid_t>(pid), SIGKILL);
    }
  }
  void KeepForInspection() const {
    const char* base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/shardkv-drill-failed-XXXXXX";
    const char* kept = mkdtemp(pattern.data());
    std::error_code ec;
    if (kept != nullptr) {
      std::filesystem::copy(dir_.path(), kept, std::filesystem::copy_options::recursive, ec);
    }
    std::cerr << "\n*** drill failed; cluster directory kept in "
              << (kept != nullptr && !ec ? kept : "(copy failed)") << "\n"
              << NodeLogTails(40) << std::endl;
  }

  TempDir dir_;
  const int failures_at_start_;
};

// SIGCONTs a stopped node however the drill ends, before the Drill's `cluster down`.
struct ContinueGuard {
  pid_t pid = 0;
  ~ContinueGuard() {
    if (pid > 0) kill(pid, SIGCONT);
  }
};

// `rebalance watch`, bounded.
Proc Watch(const Drill& d, milliseconds limit = seconds(240)) {
  return d.Cli({"rebalance", "watch"}, limit);
}

// The map `address` holds.
std::optional<shardkv::ClusterMap> NodeMap(const std::string& address) {
  shardkv::net::RpcClient rpc(address);
  shardkv::net::Request req;
  req.body = shardkv::net::GetClusterMapRequest{};
  auto reply = rpc.CallSync(std::move(req), seconds(2));
  if (!reply.ok() || !reply->ok()) return std::nullopt;
  const auto* body = std::get_if<shardkv::net::GetClusterMapResponse>(&reply->body);
  if (body == nullptr) return std::nullopt;
  auto map = shardkv::ClusterMap::Decode(body->map);
  if (!map.ok()) return std::nullopt;
  return std::move(*map);
}

// The epoch of the map `address` holds (nullopt if it does not answer).
std::optional<uint64_t> NodeEpoch(const std::string& address) {
  auto map = NodeMap(address);
  if (!map) return std::nullopt;
  return map->epoch();
}

// How many of `keys` node `address` holds in its own store (replica read, no coordination).
int LocallyHeld(const std::string& address, const shardkv::ClusterMap& map,
                const std::vector<std::string>& keys) {
  shardkv::net::RpcClient rpc(address);
  int held = 0;
  for (const std::string& key : keys) {
    shardkv::net::Request req;
    req.body = shardkv::net::ReplicaReadRequest{map.TokenOf(key), key};
    auto reply = rpc.CallSync(std::move(req), seconds(5));
    if (!reply.ok() || !reply->ok()) continue;
    const auto* body = std::get_if<shardkv::net::ReplicaReadResponse>(&reply->body);
    held += body != nullptr && body->found && !body->tombstone;
  }
  return held;
}

// Local wall-clock time as the node logs print it (HH:MM:SS.mmm), to line test events up with
// node.log lines.
std::string WallClock() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  const auto ms = std::chrono::duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03d", buf, static_cast<int>(ms));
  return out;
}

shardkv::ClientOptions ClientFor(const Drill& d, const std::vector<int>& ids) {
  shardkv::ClientOptions o;
  for (int id : ids) o.seeds.push_back(d.Address(id));
  o.timeout_ms = 5000;
  return o;
}

shardkv::testing::HistoryOptions LongHistory() {
  shardkv::testing::HistoryOptions ho;
  ho.keys = 100;
  ho.seed = 7;
  ho.duration = milliseconds(600000);  // Stop()ped by the drill
  return ho;
}

// The load of a drill: `count` keys of `value_size` bytes, fixed seed, and the cluster shape.
struct Load {
  int count = 0;
  size_t value_size = 100;
  std::string mode = "ring";
  std::vector<std::string> up_flags;  // extra `cluster up` flags
  std::vector<std::string> Flags() const {
    return {"--count", std::to_string(count), "--value-size", std::to_string(value_size), "--seed",
            "1"};
  }
};

// The drills that act mid-stream need a stream task caught half done, with seconds of it left:
// the destination checkpoints after every batch (2048 entries or 2 MB) and reports progress
// after every slice (500 ms), and the change runs one task at a time with --streams 1. Jump mode
// with 4 shards makes 3 tasks on 3 -> 4 nodes, one per old node, each a quarter of the keys;
// about 24 MB per replica makes each task about 3 batches, and 1 MB/s about 2 s per batch. The
// value size grows as SHARDKV_TEST_KEYS shrinks to keep that shape; the drills lift the throttle
// once the fault is in.
Load SlowLoad() {
  Load l;
  l.count = std::max(1000, TestKeys(20000));
  l.value_size = static_cast<size_t>(std::clamp(24'000'000 / l.count, 1000, 24'000));
  l.mode = "jump";
  l.up_flags = {"--shards", "4"};
  return l;
}

void Up(Drill& d, int nodes, const Load& load) {
  std::vector<std::string> up_args = {"cluster",     "up",      "--nodes",    std::to_string(nodes),
                                      "--mode",      load.mode, "--replicas", "3",
                                      "--base-port", "0"};
  up_args.insert(up_args.end(), load.up_flags.begin(), load.up_flags.end());
  auto up = d.Cli(up_args);
  INFO(up.Text());
  REQUIRE(up.exit_code == 0);
  std::vector<std::string> args = {"load"};
  for (auto& f : load.Flags()) args.push_back(f);
  auto loaded = d.Cli(args);
  INFO(loaded.Text());
  REQUIRE(loaded.exit_code == 0);
}

void Verify(const Drill& d, const Load& load) {
  std::vector<std::string> args = {"verify"};
  for (auto& f : load.Flags()) args.push_back(f);
  auto verified = d.Cli(args);
  INFO(verified.Text());
  CHECK(verified.exit_code == 0);
}

// One entry of `rebalance status --json`'s streams[] (a source -> destination pair).
struct StreamEntry {
  double source = 0, destination = 0, ranges_total = 0, ranges_done = 0;
  double copies_planned = 0, copies_done = 0;
};

std::vector<StreamEntry> ParseStreams(const std::string& json) {
  std::vector<StreamEntry> out;
  size_t at = json.find("\"streams\":[");
  if (at == std::string::npos) return out;
  for (;;) {
    const size_t open = json.find('{', at);
    const size_t end = json.find(']', at);
    if (open == std::string::npos || (end != std::string::npos && end < open)) break;
    const size_t close = json.find('}', open);
    if (close == std::string::npos) break;
    const std::string obj = json.substr(open, close - open + 1);
    StreamEntry e;
    e.source = JsonNumber(obj, "source");
    e.destination = JsonNumber(obj, "destination");
    e.ranges_total = JsonNumber(obj, "ranges_total");
    e.ranges_done = JsonNumber(obj, "ranges_done");
    e.copies_planned = JsonNumber(obj, "copies_planned");
    e.copies_done = JsonNumber(obj, "copies_done");
    out.push_back(e);
    at = close + 1;
  }
  return out;
}

// A stream task is half done right now, with at least half of it left: a pair with a single
// range has reported some but at most half of its copies. The destination checkpointed them
// before it reported them.
bool TaskHalfDone(const RebalanceStatus& s) {
  for (const StreamEntry& e : ParseStreams(s.proc.out)) {
    if (e.ranges_total == 1 && e.ranges_done == 0 && e.copies_done > 0 &&
        e.copies_done * 2 <= e.copies_planned) {
      return true;
    }
  }
  return false;
}

// `cluster add-node` throttled to 1 MB/s and one stream, then polls until a stream task is half
// done (SlowLoad() explains why that happens). Returns that status.
RebalanceStatus AddNodeSlowly(Drill& d) {
  auto add = d.Cli({"cluster", "add-node", "--yes", "--rate", "1", "--streams", "1"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  bool half_done = false;
  RebalanceStatus st = d.PollStatus(
      [](const RebalanceStatus& s) { return s.state == "streaming" && TaskHalfDone(s); },
      seconds(60), &half_done);
  INFO("last status: " << st.proc.Text());
  REQUIRE(half_done);
  REQUIRE(st.moved_copies > 0);
  REQUIRE(st.moved_copies < st.planned_copies);  // really mid-stream
  return st;
}

// Lifts the throttle once the fault is in, so the drill does not wait out 1 MB/s. A task already
// running keeps its rate to its end.
void Unthrottle(Drill& d) {
  auto t = d.Cli({"rebalance", "throttle", "--rate", "256", "--streams", "2"});
  INFO(t.Text());
  CHECK(t.exit_code == 0);
}

// Watches the change to its end; if it went to failed meanwhile, resumes it once and watches
// again (design: a failed change continues from its checkpoints). Returns the last watch.
Proc WatchResumingOnce(Drill& d, bool* resumed) {
  *resumed = false;
  Proc w = Watch(d);
  if (w.exit_code == 0) return w;
  RebalanceStatus st = d.Status();
  if (st.state != "failed") return w;
  WARN("change failed (" << st.error << "); resuming\n" << w.Text());
  auto resume = d.Cli({"rebalance", "resume"});
  INFO(resume.Text());
  CHECK(resume.exit_code == 0);
  *resumed = true;
  return Watch(d);
}

// The moved fraction against the ideal: within `factor` either way.
void CheckFraction(const RebalanceStatus& st, double factor, const std::string& what) {
  const double fraction = st.moved_copies / st.total_copies;
  WARN(what << ": moved " << st.moved_copies << " of " << st.total_copies
            << " copies = " << fraction << " (ideal " << st.ideal_fraction << ", ratio "
            << fraction / st.ideal_fraction << "), planned " << st.planned_copies
            << ", remapped keys " << st.remapped_keys);
  REQUIRE(st.total_copies > 0);
  REQUIRE(st.ideal_fraction > 0);
  CHECK(fraction <= st.ideal_fraction * factor);
  CHECK(fraction >= st.ideal_fraction / factor);
  // Only the history checker's 100 keys change while the change runs.
  CHECK(std::abs(st.moved_copies - st.planned_copies) <= 100);
}

// ---- Drill 1: add then remove a node under the history checker -------------------------------

void AddThenRemove(const std::string& mode, double factor) {
  Drill d;
  Load load;
  load.count = TestKeys(20000);
  load.mode = mode;
  Up(d, 3, load);
  const shardkv::ClientOptions co = ClientFor(d, {1, 2, 3});
  shardkv::testing::HistoryChecker checker(co, LongHistory());
  REQUIRE(checker.Start().ok());
  REQUIRE(checker.WaitUntil([](const auto& s) { return s.acked >= 100; }, seconds(30)));

  auto add = d.Cli({"cluster", "add-node", "--yes"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  auto watch_add = Watch(d);
  INFO(watch_add.Text());
  REQUIRE(watch_add.exit_code == 0);
  RebalanceStatus added = d.Status();
  INFO("after add: " << added.proc.Text());
  REQUIRE(added.ok());
  CHECK(added.state == "done");
  CHECK(added.kind == "add");
  CHECK(added.node_id == 4);
  CHECK(added.client_errors == 0);
  CheckFraction(added, factor, mode + " add node 4");

  uint64_t acked = checker.stats().acked;
  REQUIRE(checker.WaitUntil([&](const auto& s) { return s.acked >= acked + 100; }, seconds(30)));
  auto remove = d.Cli({"cluster", "remove-node", "4", "--yes"});
  INFO(remove.Text());
  REQUIRE(remove.exit_code == 0);
  auto watch_remove = Watch(d);
  INFO(watch_remove.Text());
  REQUIRE(watch_remove.exit_code == 0);
  RebalanceStatus removed = d.Status();
  INFO("after remove: " << removed.proc.Text());
  REQUIRE(removed.ok());
  CHECK(removed.state == "done");
  CHECK(removed.kind == "remove");
  CHECK(removed.node_id == 4);
  CHECK(removed.client_errors == 0);
  CheckFraction(removed, factor, mode + " remove node 4");

  acked = checker.stats().acked;
  CHECK(checker.WaitUntil([&](const auto& s) { return s.acked >= acked + 100; }, seconds(30)));
  checker.Stop();
  const auto stats = checker.stats();
  INFO("history: acked " << stats.acked << " failed " << stats.failed << " reads " << stats.reads
                         << " read errors " << stats.read_errors << " last error "
                         << stats.last_error << "; " << kSeedsNote);
  shardkv::Status final_check = checker.FinalCheck(co);
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  CHECK(checker.Violations().empty());
  CHECK(stats.failed == 0);
  CHECK(stats.read_errors == 0);
  Verify(d, load);
}

// Kills `victim` mid-stream (the change throttled), then lets the change finish without it.
// Returns the status once done.
// `allow_resume`: a change that went to failed meanwhile may be resumed once.
RebalanceStatus KillMidStreamAndFinish(Drill& d, int victim, bool restart_before_watch,
                                       bool allow_resume) {
  auto kill9 = d.Cli({"cluster", "stop-node", std::to_string(victim), "--kill"});
  INFO(kill9.Text());
  REQUIRE(kill9.exit_code == 0);
  if (restart_before_watch) {
    auto start = d.Cli({"cluster", "start-node", std::to_string(victim)});
    INFO(start.Text());
    REQUIRE(start.exit_code == 0);
  }
  Unthrottle(d);
  bool resumed = false;
  Proc w = allow_resume ? WatchResumingOnce(d, &resumed) : Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  REQUIRE(st.ok());
  CHECK(st.state == "done");
  return st;
}

}  // namespace

TEST_CASE("drill: add then remove a node under the history checker (ring)", "[rebalance][drill]") {
  AddThenRemove("ring", 1.3);
}

TEST_CASE("drill: add then remove a node under the history checker (jump)", "[rebalance][drill]") {
  AddThenRemove("jump", 1.1);
}

TEST_CASE("drill: kill -9 of the destination mid-stream resumes from checkpoints",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  WARN("killing destination node 4 at " << mid.moved_copies << " of " << mid.planned_copies
                                        << " copies");
  const RebalanceStatus st = KillMidStreamAndFinish(d, 4, /*restart_before_watch=*/true,
                                                    /*allow_resume=*/true);
  WARN("destination drill: planned " << st.planned_copies << " moved " << st.moved_copies
                                     << " resumed tasks " << st.resumed_tasks);
  CHECK(st.resumed_tasks > 0);
  CHECK(st.moved_copies >= st.planned_copies);
  CHECK(st.moved_copies <= st.planned_copies + 100);
  Verify(d, load);
}

TEST_CASE("drill: kill -9 of a source mid-stream merges from the other old replicas",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  // A source with work left, not the driver: preferably the one whose task is half done.
  int victim = mid.driver == 3 ? 2 : 3;
  int rank = 0;
  for (const StreamEntry& e : ParseStreams(mid.proc.out)) {
    const int source = static_cast<int>(e.source);
    if (source == static_cast<int>(mid.driver) || source < 1 || source > 3) continue;
    const int r = e.ranges_done == 0 && e.copies_done > 0 ? 2 : (e.ranges_done < e.ranges_total);
    if (r > rank) {
      victim = source;
      rank = r;
    }
  }
  WARN("killing source node " << victim << " (driver is " << mid.driver << ") at "
                              << mid.moved_copies << " of " << mid.planned_copies << " copies");
  const RebalanceStatus st = KillMidStreamAndFinish(d, victim, /*restart_before_watch=*/false,
                                                    /*allow_resume=*/false);
  WARN("source drill: planned " << st.planned_copies << " moved " << st.moved_copies
                                << " resumed tasks " << st.resumed_tasks);
  auto start = d.Cli({"cluster", "start-node", std::to_string(victim)});
  INFO(start.Text());
  REQUIRE(start.exit_code == 0);
  Verify(d, load);
}

TEST_CASE("drill: kill -9 of the driver mid-stream hands the change to another node",
          "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  const int driver = static_cast<int>(mid.driver);
  REQUIRE(driver >= 1);
  REQUIRE(driver <= 4);
  WARN("killing driver node " << driver << " at " << mid.moved_copies << " of "
                              << mid.planned_copies << " copies");
  auto kill9 = d.Cli({"cluster", "stop-node", std::to_string(driver), "--kill"});
  INFO(kill9.Text());
  REQUIRE(kill9.exit_code == 0);
  // Through a surviving node only: the takeover commits an epoch naming the new driver.
  const std::string via = d.Address(driver == 1 ? 2 : 1);
  RebalanceStatus seen;
  const bool handed_over = PollUntil(
      [&] {
        seen = d.StatusVia(via);
        return seen.ok() && seen.driver != 0 && seen.driver != driver;
      },
      seconds(60), milliseconds(200));
  INFO("last status via " << via << ": " << seen.proc.Text());
  REQUIRE(handed_over);
  WARN("driver " << driver << " -> " << seen.driver << " (epoch " << seen.epoch << ", state "
                 << seen.state << ")");
  Unthrottle(d);
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  const RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  CHECK(st.state == "done");
  WARN("driver drill: planned " << st.planned_copies << " moved " << st.moved_copies
                                << " resumed tasks " << st.resumed_tasks);
  auto start = d.Cli({"cluster", "start-node", std::to_string(driver)});
  INFO(start.Text());
  REQUIRE(start.exit_code == 0);
  Verify(d, load);
}

TEST_CASE("drill: a replica SIGSTOPped across a whole change converges after SIGCONT",
          "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = TestKeys(20000);
  Up(d, 3, load);
  const shardkv::ClientOptions co = ClientFor(d, {1, 2, 3});
  shardkv::testing::HistoryChecker checker(co, LongHistory());
  const auto t0 = Clock::now();  // about the checker's time origin
  auto since_t0 = [&] {
    return std::to_string(std::chrono::duration_cast<milliseconds>(Clock::now() - t0).count()) +
           " ms (wall " + WallClock() + ")";
  };
  REQUIRE(checker.Start().ok());
  REQUIRE(checker.WaitUntil([](const auto& s) { return s.acked >= 100; }, seconds(30)));

  const pid_t pid = d.Pid(3);
  REQUIRE(pid > 0);
  ContinueGuard cont;
  REQUIRE(kill(pid, SIGSTOP) == 0);
  cont.pid = pid;
  const std::string stopped_at = since_t0();
  // At once, as an operator would: the plan must not depend on the paused node answering.
  auto add = d.Cli({"cluster", "add-node", "--yes"}, seconds(40));
  {
    INFO("add-node right after SIGSTOP of node 3:\n" << add.Text());
    CHECK(add.exit_code == 0);
  }
  if (add.exit_code != 0) {
    // Go on with the rest of the drill: by now the failure detector has noticed node 3. An
    // add-node killed at the time limit leaves its new node running outside the cluster; stop
    // it, or `--dir` clients may ask it (it answers reads "not found").
    if (auto before = NodeMap(d.Address(1))) {
      for (int id = 4; id <= 8; ++id) {
        if (before->FindNode(static_cast<uint32_t>(id)) == nullptr && d.Pid(id) > 0) {
          auto stop = d.Cli({"cluster", "stop-node", std::to_string(id)});
          WARN("stopped node " << id << ", left outside the cluster by the killed add-node: "
                               << stop.Text());
        }
      }
    }
    add = d.Cli({"cluster", "add-node", "--yes"});
    INFO("add-node retried: " << add.Text());
    REQUIRE(add.exit_code == 0);
  }
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  const RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  CHECK(st.state == "done");
  CHECK(st.kind == "add");
  const std::string watched_at = since_t0();
  REQUIRE(kill(pid, SIGCONT) == 0);
  cont.pid = 0;
  const std::string continued_at = since_t0();
  WARN("node 3 SIGSTOP at t=" << stopped_at << "; change done (watch returned) at t=" << watched_at
                              << "; SIGCONT at t=" << continued_at);

  // Node 3 catches up with the map the others moved on to.
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  REQUIRE(map->nodes().size() == 4);
  std::string epochs;
  const bool converged = PollUntil(
      [&] {
        epochs.clear();
        std::set<uint64_t> distinct;
        bool all = true;
        for (const shardkv::ClusterNode& n : map->nodes()) {
          auto e = NodeEpoch(n.address);
          epochs += "node " + std::to_string(n.id) + ": " + (e ? std::to_string(*e) : "-") + "; ";
          all = all && e.has_value();
          if (e) distinct.insert(*e);
        }
        return all && distinct.size() == 1;
      },
      seconds(60), milliseconds(250));
  INFO("epochs: " << epochs);
  CHECK(converged);
  auto status = d.Cli({"cluster", "status", "--json"});
  INFO(status.Text());
  CHECK(status.exit_code == 0);
  // Every replica holds the loaded keys the final placement gives it (they were written before
  // the pause, so node 3 has them too, and nobody may have dropped them).
  {
    std::vector<std::string> sample;
    for (int i = 0; i < load.count; i += std::max(1, load.count / 1000)) {
      sample.push_back("key:" + std::to_string(i));
    }
    for (const shardkv::ClusterNode& n : map->nodes()) {
      std::vector<std::string> own;
      for (const std::string& key : sample) {
        const auto replicas = map->Replicas(map->TokenOf(key));
        if (std::find(replicas.begin(), replicas.end(), n.id) != replicas.end()) {
          own.push_back(key);
        }
      }
      INFO("node " << n.id << " should hold " << own.size() << " of the sampled keys");
      CHECK(LocallyHeld(n.address, *map, own) == static_cast<int>(own.size()));
    }
  }

  const uint64_t acked = checker.stats().acked;
  CHECK(checker.WaitUntil([&](const auto& s) { return s.acked >= acked + 100; }, seconds(30)));
  checker.Stop();
  const auto stats = checker.stats();
  // Requests a stopped node coordinated may time out: counted, not violations.
  WARN("history with node 3 stopped: acked "
       << stats.acked << " failed " << stats.failed << " reads " << stats.reads << " read errors "
       << stats.read_errors << " last error " << stats.last_error);
  shardkv::ClientOptions final_co;
  for (const shardkv::ClusterNode& n : map->nodes()) final_co.seeds.push_back(n.address);
  shardkv::Status final_check = checker.FinalCheck(final_co);
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  const auto violations = checker.Violations();
  std::string listed;
  for (size_t i = 0; i < violations.size() && i < 100; ++i) listed += violations[i] + "\n";
  // Where the violated keys live now, to tell whether the paused node is one of their replicas.
  std::set<std::string> violated_keys;
  for (const std::string& v : violations) {
    const size_t open = v.find("key '");
    const size_t close = open == std::string::npos ? open : v.find('\'', open + 5);
    if (close != std::string::npos) violated_keys.insert(v.substr(open + 5, close - open - 5));
  }
  for (const std::string& key : violated_keys) {
    listed += "  " + key + " replicas now:";
    for (uint32_t id : map->Replicas(map->TokenOf(key))) listed += " " + std::to_string(id);
    listed += "\n";
  }
  INFO(violations.size() << " violations (SIGSTOP at t=" << stopped_at
                         << ", SIGCONT at t=" << continued_at << "):\n"
                         << listed);
  CHECK(violations.empty());
  Verify(d, load);
}

TEST_CASE("drill: cancel mid-stream restores the old placement", "[rebalance][drill]") {
  Drill d;
  const Load load = SlowLoad();
  Up(d, 3, load);
  const RebalanceStatus mid = AddNodeSlowly(d);
  WARN("cancelling at " << mid.moved_copies << " of " << mid.planned_copies << " copies");
  auto cancel = d.Cli({"rebalance", "cancel"});
  INFO(cancel.Text());
  REQUIRE(cancel.exit_code == 0);
  bool cancelled = false;
  const RebalanceStatus st =
      d.PollStatus([](const RebalanceStatus& s) { return s.Ended(); }, seconds(60), &cancelled);
  INFO(st.proc.Text());
  REQUIRE(cancelled);
  CHECK(st.state == "cancelled");
  Verify(d, load);

  auto status = d.Cli({"cluster", "status", "--json"});
  INFO(status.Text());
  CHECK(status.exit_code == 0);
  CHECK(CountStringField(status.out, "map_state") == 3);
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  CHECK(map->nodes().size() == 3);
  CHECK(!map->has_pending());

  auto again = d.Cli({"rebalance", "cancel"});
  INFO(again.Text());
  CHECK(again.exit_code != 0);
  CHECK(!again.err.empty());
}

TEST_CASE("drill: cancel of a finished change is refused", "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = std::max(1, TestKeys(20000) / 10);
  Up(d, 3, load);
  auto add = d.Cli({"cluster", "add-node", "--yes"});
  INFO(add.Text());
  REQUIRE(add.exit_code == 0);
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  REQUIRE(d.Status().state == "done");
  auto cancel = d.Cli({"rebalance", "cancel"});
  INFO(cancel.Text());
  CHECK(cancel.exit_code != 0);
  // A clear message: it says why (no change running / the change is done).
  CHECK((cancel.err.find("done") != std::string::npos ||
         cancel.err.find("no change is running") != std::string::npos));
  CHECK(d.Status().state == "done");  // and nothing changed
  Verify(d, load);
}

TEST_CASE("drill: a dead node is removed by streaming from the surviving replicas",
          "[rebalance][drill]") {
  Drill d;
  Load load;
  load.count = TestKeys(20000);
  Up(d, 4, load);
  auto kill9 = d.Cli({"cluster", "stop-node", "4", "--kill"});
  INFO(kill9.Text());
  REQUIRE(kill9.exit_code == 0);
  // At once, as an operator would: the plan must not depend on the dead node answering.
  auto remove = d.Cli({"cluster", "remove-node", "4", "--yes"});
  {
    INFO("remove-node right after kill -9 of node 4:\n" << remove.Text());
    CHECK(remove.exit_code == 0);
  }
  if (remove.exit_code != 0) {
    // Go on with the rest of the drill once the failure detector has noticed node 4.
    const bool begun = PollUntil(
        [&] {
          remove = d.Cli({"cluster", "remove-node", "4", "--yes"});
          return remove.exit_code == 0;
        },
        seconds(30), milliseconds(500));
    INFO("remove-node retried: " << remove.Text());
    REQUIRE(begun);
  }
  auto w = Watch(d);
  INFO(w.Text());
  REQUIRE(w.exit_code == 0);
  const RebalanceStatus st = d.Status();
  INFO(st.proc.Text());
  CHECK(st.state == "done");
  CHECK(st.kind == "remove");
  CHECK(st.node_id == 4);
  Verify(d, load);

  // RF = 3 on the 3 remaining nodes: each holds every key.
  auto map = NodeMap(d.Address(1));
  REQUIRE(map.has_value());
  CHECK(map->nodes().size() == 3);
  std::mt19937 rng(42);
  std::uniform_int_distribution<int> pick(0, load.count - 1);
  std::vector<std::string> sample;
  for (int i = 0; i < 500; ++i) sample.push_back("key:" + std::to_string(pick(rng)));
  for (int id = 1; id <= 3; ++id) {
    INFO("node " << id);
    CHECK(LocallyHeld(d.Address(id), *map, sample) == 500);
  }
}
