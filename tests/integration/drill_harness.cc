#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener that notices failed assertions
#include "integration/drill_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <variant>

#include "net/rpc_client.h"

extern char** environ;

namespace shardkv::drill {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

std::atomic<int> g_failed_assertions{0};

class FailureCounter : public Catch::TestEventListenerBase {
 public:
  using Catch::TestEventListenerBase::TestEventListenerBase;
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) ++g_failed_assertions;
    return true;
  }
};

// The registrar is a static object of this file, which the test binary links whole (it is one of
// its sources, not a library member), so the listener is always registered.
CATCH_REGISTER_LISTENER(FailureCounter)

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

// The raw value of the first `"key":` in `json` (strings unquoted, minimal unescaping); nullopt
// if absent.
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

}  // namespace

int TestKeys(int fallback) {
  const char* env = std::getenv("SHARDKV_TEST_KEYS");
  return env && *env ? std::atoi(env) : fallback;
}

int FailedAssertions() { return g_failed_assertions.load(); }

// ---- Processes with a deadline ----------------------------------------------------------------

std::string Proc::Text() const {
  return "exit " + std::to_string(exit_code) + (timed_out ? " (timed out, killed)" : "") +
         "\n--- stdout\n" + out + "--- stderr\n" + err;
}

// Like lab/subprocess.h's RunProcess (output to files, not pipes: no poll loop, no deadlock on
// large JSON), which cannot serve here: it waits without a limit and does not expose the pid to
// kill, and a hung `rebalance watch` must fail the drill instead of hanging ctest.
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

bool PollUntil(const std::function<bool()>& done, milliseconds limit, milliseconds every) {
  const auto deadline = Clock::now() + limit;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

// ---- Flat JSON --------------------------------------------------------------------------------

double JsonNumber(const std::string& json, const std::string& key) {
  auto raw = JsonRaw(json, key);
  if (!raw || raw->empty() || *raw == "null") return std::nan("");
  return std::strtod(raw->c_str(), nullptr);
}

std::string JsonString(const std::string& json, const std::string& key) {
  return JsonRaw(json, key).value_or("");
}

int CountStringField(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  int n = 0;
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

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

// ---- The cluster under test -------------------------------------------------------------------

Drill::Drill() : failures_at_start_(FailedAssertions()) {
  // `cluster up` / `add-node` launch the node binary of this build, not one from PATH.
  setenv("SHARDKV_NODE_BIN", SHARDKV_NODE_PATH, 1);
  REQUIRE(!dir_.path().empty());
}

Drill::~Drill() {
  RunFor({SHARDKV_CLI_PATH, "--dir", dir_.path(), "cluster", "down", "--wait", "10"}, seconds(60));
  KillLeftovers();
  if (FailedAssertions() != failures_at_start_ || std::uncaught_exceptions() > 0) {
    KeepForInspection();
  }
}

Proc Drill::Cli(std::vector<std::string> args, milliseconds limit) const {
  std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--dir", dir_.path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunFor(argv, limit);
}

Proc Drill::CliVia(const std::string& address, std::vector<std::string> args,
                   milliseconds limit) const {
  std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--cluster", address};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunFor(argv, limit);
}

void Drill::CliOk(std::vector<std::string> args) const {
  std::string command = "shardkv";
  for (const std::string& a : args) command += " " + a;
  const Proc p = Cli(std::move(args));
  INFO(command << ": " << p.Text());
  REQUIRE(p.exit_code == 0);
}

RebalanceStatus Drill::Status() const {
  return ParseStatus(Cli({"rebalance", "status", "--json"}, seconds(60)));
}

RebalanceStatus Drill::StatusVia(const std::string& address) const {
  return ParseStatus(CliVia(address, {"rebalance", "status", "--json"}));
}

RebalanceStatus Drill::PollStatus(const std::function<bool(const RebalanceStatus&)>& done,
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

std::string Drill::Address(int id) const {
  std::ifstream in(dir_.Sub("node-" + std::to_string(id) + "/port"));
  int port = 0;
  in >> port;
  return "127.0.0.1:" + std::to_string(port);
}

pid_t Drill::Pid(int id) const {
  std::ifstream in(dir_.Sub("node-" + std::to_string(id) + "/pid"));
  long pid = 0;
  in >> pid;
  return static_cast<pid_t>(pid);
}

std::string Drill::NodeLogTails(size_t lines) const {
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

// Any node process whose command line names this directory (pid reuse cannot hit another).
void Drill::KillLeftovers() const {
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

void Drill::KeepForInspection() const {
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/shardkv-drill-failed-XXXXXX";
  const char* kept = mkdtemp(pattern.data());
  std::error_code ec;
  if (kept != nullptr) {
    std::filesystem::copy(dir_.path(), kept, std::filesystem::copy_options::recursive, ec);
  }
  std::cerr << "\n*** drill failed; cluster directory kept in "
            << (kept != nullptr && !ec ? kept : "(copy failed)") << "\n"
            << NodeLogTails(40) << std::endl;
}

ContinueGuard::~ContinueGuard() {
  if (pid > 0) kill(pid, SIGCONT);
}

Proc Watch(const Drill& d, milliseconds limit) { return d.Cli({"rebalance", "watch"}, limit); }

std::vector<std::string> Load::Flags() const {
  return {"--count", std::to_string(count), "--value-size", std::to_string(value_size), "--seed",
          "1"};
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

// ---- One node, directly -----------------------------------------------------------------------

std::optional<ClusterMap> NodeMap(const std::string& address) {
  net::RpcClient rpc(address);
  net::Request req;
  req.body = net::GetClusterMapRequest{};
  auto reply = rpc.CallSync(std::move(req), seconds(2));
  if (!reply.ok() || !reply->ok()) return std::nullopt;
  const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
  if (body == nullptr) return std::nullopt;
  auto map = ClusterMap::Decode(body->map);
  if (!map.ok()) return std::nullopt;
  return std::move(*map);
}

std::optional<uint64_t> NodeEpoch(const std::string& address) {
  auto map = NodeMap(address);
  if (!map) return std::nullopt;
  return map->epoch();
}

int LocallyHeld(const std::string& address, const ClusterMap& map,
                const std::vector<std::string>& keys) {
  net::RpcClient rpc(address);
  int held = 0;
  for (const std::string& key : keys) {
    net::Request req;
    req.body = net::ReplicaReadRequest{map.TokenOf(key), key};
    auto reply = rpc.CallSync(std::move(req), seconds(5));
    if (!reply.ok() || !reply->ok()) continue;
    const auto* body = std::get_if<net::ReplicaReadResponse>(&reply->body);
    held += body != nullptr && body->found && !body->tombstone;
  }
  return held;
}

bool PollOneEpoch(const ClusterMap& map, milliseconds limit, std::string* epochs) {
  return PollUntil(
      [&] {
        epochs->clear();
        std::set<uint64_t> distinct;
        bool all = true;
        for (const ClusterNode& n : map.nodes()) {
          auto e = NodeEpoch(n.address);
          *epochs += "node " + std::to_string(n.id) + ": " + (e ? std::to_string(*e) : "-") + "; ";
          all = all && e.has_value();
          if (e) distinct.insert(*e);
        }
        return all && distinct.size() == 1;
      },
      limit, milliseconds(250));
}

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

// ---- The history checker ----------------------------------------------------------------------

ClientOptions ClientFor(const Drill& d, const std::vector<int>& ids) {
  ClientOptions o;
  for (int id : ids) o.seeds.push_back(d.Address(id));
  o.timeout_ms = 5000;
  return o;
}

testing::HistoryOptions LongHistory() {
  testing::HistoryOptions ho;
  ho.keys = 100;
  ho.seed = 7;
  ho.duration = milliseconds(600000);  // Stop()ped by the drill
  return ho;
}

bool HundredMoreAcked(const testing::HistoryChecker& checker) {
  const uint64_t acked = checker.stats().acked;
  return checker.WaitUntil([&](const auto& s) { return s.acked >= acked + 100; }, seconds(30));
}

std::string HistoryText(const testing::HistoryStats& stats) {
  return "acked " + std::to_string(stats.acked) + " failed " + std::to_string(stats.failed) +
         " reads " + std::to_string(stats.reads) + " read errors " +
         std::to_string(stats.read_errors) + " last error " + stats.last_error;
}

std::string ListViolations(const std::vector<std::string>& violations, const ClusterMap& map) {
  std::string listed;
  for (size_t i = 0; i < violations.size() && i < 100; ++i) listed += violations[i] + "\n";
  std::set<std::string> violated_keys;
  for (const std::string& v : violations) {
    const size_t open = v.find("key '");
    const size_t close = open == std::string::npos ? open : v.find('\'', open + 5);
    if (close != std::string::npos) violated_keys.insert(v.substr(open + 5, close - open - 5));
  }
  for (const std::string& key : violated_keys) {
    listed += "  " + key + " replicas now:";
    for (uint32_t id : map.Replicas(map.TokenOf(key))) listed += " " + std::to_string(id);
    listed += "\n";
  }
  return listed;
}

}  // namespace shardkv::drill
