#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener that notices failed assertions
#include "integration/drill_harness.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

namespace shardkv::drill {

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

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

int FailedAssertions() { return g_failed_assertions.load(); }

// ---- Flat JSON --------------------------------------------------------------------------------

int CountStringField(const std::string& json, const std::string& key) {
  const std::string needle = "\"" + key + "\":\"";
  int n = 0;
  for (size_t at = json.find(needle); at != std::string::npos; at = json.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// ---- Change reports ---------------------------------------------------------------------------

double MovedFraction(const ChangeReport& r) {
  if (r.record.total_copies == 0) return 0;
  return static_cast<double>(r.record.moved_copies) / static_cast<double>(r.record.total_copies);
}

// The numbers a failed drill check needs, readable (the report's encoding is binary).
std::string Text(const ChangeReport& r) {
  const ChangeRecord& c = r.record;
  auto n = [](const char* k, auto v) { return std::string(" ") + k + "=" + std::to_string(v); };
  return testing::DescribeChange(r) + "\n" + n("change_id", c.change_id) + n("driver", r.driver) +
         n("epoch", r.epoch) + n("planned_copies", c.planned_copies) +
         n("total_copies", c.total_copies) + n("moved_copies", c.moved_copies) +
         n("moved_tombstones", c.moved_tombstones) + n("moved_bytes", c.moved_bytes) +
         n("moved_during_change", c.moved_during_change) + n("resumed_copies", c.resumed_copies) +
         n("resumed_tasks", c.resumed_tasks) + n("takeovers", c.takeovers) +
         n("client_errors", c.client_errors) + n("copies_done", r.copies_done) +
         n("streams", r.streams.size());
}

std::string Text(const AdminReply& r) {
  std::string s = "from " + (r.address.empty() ? std::string("-") : r.address) + ": " +
                  r.status.ToString() + (r.unreachable ? " (unreachable)" : "") +
                  (r.foreign ? " (foreign)" : "");
  if (r.status.ok()) s += "\n" + Text(r.report);
  return s;
}

// ---- The cluster under test -------------------------------------------------------------------

Drill::Drill() : failures_at_start_(FailedAssertions()) {
  // `cluster up` / `add-node` launch the node binary of this build, not one from PATH.
  setenv("SHARDKV_NODE_BIN", SHARDKV_NODE_PATH, 1);
  REQUIRE(!dir_.path().empty());
}

Drill::~Drill() {
  testing::RunProcess({SHARDKV_CLI_PATH, "--dir", dir_.path(), "cluster", "down", "--wait", "10"},
                      seconds(60));
  KillLeftovers();
  if (FailedAssertions() != failures_at_start_ || std::uncaught_exceptions() > 0) {
    KeepForInspection();
  }
}

Proc Drill::Cli(std::vector<std::string> args, milliseconds limit) const {
  std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--dir", dir_.path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv, limit);
}

Proc Drill::CliVia(const std::string& address, std::vector<std::string> args,
                   milliseconds limit) const {
  std::vector<std::string> argv = {SHARDKV_CLI_PATH, "--cluster", address};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::RunProcess(argv, limit);
}

void Drill::CliOk(std::vector<std::string> args) const {
  std::string command = "shardkv";
  for (const std::string& a : args) command += " " + a;
  const Proc p = Cli(std::move(args));
  INFO(command << ": " << p.Text());
  REQUIRE(p.exit_code == 0);
}

Admin& Drill::admin() const {
  if (!admin_) admin_ = testing::AdminFor(Addresses(), ClusterId());
  admin_->SetSeeds(Addresses());
  return *admin_;
}

AdminReply Drill::Status() const { return admin().ChangeStatus(); }

StatusOr<ChangeReport> Drill::WaitFor(const std::function<bool(const ChangeReport&)>& done,
                                      milliseconds limit) const {
  return testing::WaitChange(admin(), done, limit);
}

StatusOr<ChangeReport> Drill::WaitEnded(milliseconds limit) const {
  return testing::WaitChangeEnded(admin(), limit);
}

std::string Drill::Address(int id) const {
  return testing::AddressFromPortFile(dir_.Sub("node-" + std::to_string(id)));
}

std::vector<std::string> Drill::Addresses() const {
  return testing::NodeAddressesInDir(dir_.path());
}

uint64_t Drill::ClusterId() const {
  const std::string id = testing::ClusterIdInDir(dir_.path());
  return id.empty() ? 0 : std::stoull(id);
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

bool PollOneEpoch(const ClusterMap& map, milliseconds limit, std::string* epochs) {
  return PollUntil(
      [&] {
        epochs->clear();
        std::set<uint64_t> distinct;
        bool all = true;
        for (const ClusterNode& n : map.nodes()) {
          const auto m = NodeMap(n.address);
          const std::optional<uint64_t> e = m ? std::optional<uint64_t>(m->epoch()) : std::nullopt;
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
