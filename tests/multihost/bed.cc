#include "multihost/bed.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "integration/background_process.h"
#include "testing/subprocess.h"

namespace shardkv::multihost {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr char kPrefix[] = "shardkv";
constexpr char kFaketimeLib[] = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1";

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool PidAlive(long pid) {
  return pid > 0 && (kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

// Beds alive in this process, for the exit hooks. A bed removes itself when destroyed.
std::mutex registry_mu;
std::set<Bed*>& Registry() {
  static auto* beds = new std::set<Bed*>;
  return *beds;
}

void CleanupAll() {
  std::set<Bed*> beds;
  {
    std::lock_guard lock(registry_mu);
    beds = Registry();
  }
  for (Bed* bed : beds) bed->Cleanup();
}

// A test that aborts (a failed REQUIRE inside a destructor, a ctest timeout's SIGTERM, a
// crash) still removes its namespaces: the handler is not async-signal-safe, which is accepted
// for a test harness that is about to die anyway.
void OnFatalSignal(int sig) {
  CleanupAll();
  signal(sig, SIG_DFL);
  raise(sig);
}

void InstallHooksOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(CleanupAll);
    for (int sig : {SIGTERM, SIGINT, SIGABRT, SIGSEGV, SIGHUP}) signal(sig, OnFatalSignal);
  });
}

}  // namespace

std::string Which(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(std::string(path != nullptr ? path : "") + ":/usr/sbin:/sbin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) {
      return dir + "/" + program;
    }
  }
  return program;
}

Command RunCommand(const std::vector<std::string>& argv, std::chrono::milliseconds limit) {
  std::vector<std::string> resolved = argv;
  if (!resolved.empty()) resolved[0] = Which(resolved[0]);  // RunProcess does not search PATH
  testing::ProcessResult r = testing::RunProcess(resolved, limit);
  Command c;
  c.exit_code = r.timed_out ? -2 : r.exit_code;
  c.out = r.out + r.err;
  if (r.timed_out) c.out += "\n(timed out after " + std::to_string(limit.count()) + " ms)";
  return c;
}

std::vector<std::string> RemoveDeadRuns() {
  std::vector<std::string> removed;
  // Namespaces: shardkv-<pid>-h<i>. Processes still inside one are killed first.
  for (const std::string& line : Lines(RunCommand({"ip", "netns", "list"}, 10s).out)) {
    const std::string name = line.substr(0, line.find(' '));
    if (name.rfind(std::string(kPrefix) + "-", 0) != 0) continue;
    const long pid = std::atol(name.c_str() + sizeof(kPrefix));
    if (PidAlive(pid)) continue;
    for (const std::string& p : Lines(RunCommand({"ip", "netns", "pids", name}, 10s).out)) {
      if (const long victim = std::atol(p.c_str()); victim > 0)
        kill(static_cast<pid_t>(victim), SIGKILL);
    }
    RunCommand({"ip", "netns", "delete", name}, 10s);
    removed.push_back(name);
  }
  // Links in the root namespace: shardkv<pid hex>-<suffix>.
  for (const std::string& line : Lines(RunCommand({"ip", "-o", "link", "show"}, 10s).out)) {
    // "12: shardkv1a2b-1@if11: <...>"
    const size_t start = line.find(": ");
    if (start == std::string::npos) continue;
    std::string name = line.substr(start + 2);
    name = name.substr(0, name.find_first_of("@:"));
    if (name.rfind(kPrefix, 0) != 0 || name.find('-') == std::string::npos) continue;
    const long pid = std::strtol(name.c_str() + sizeof(kPrefix) - 1, nullptr, 16);
    if (PidAlive(pid)) continue;
    RunCommand({"ip", "link", "delete", name}, 10s);
    removed.push_back(name);
  }
  return removed;
}

struct Bed::NodeProcess {
  std::unique_ptr<testing::BackgroundProcess> process;
};

Bed::Bed(BedOptions options) : options_(std::move(options)) {
  tag_ = std::to_string(getpid());
  char hex[16];
  std::snprintf(hex, sizeof(hex), "%x", static_cast<unsigned>(getpid()));
  tag_hex_ = hex;
}

StatusOr<std::unique_ptr<Bed>> Bed::Create(BedOptions options) {
  if (geteuid() != 0) {
    return Status::Unavailable("the multi-host bed needs root (network namespaces); euid is " +
                               std::to_string(geteuid()));
  }
  if (RunCommand({"ip", "netns", "list"}, 10s).exit_code != 0) {
    return Status::Unavailable("`ip netns list` does not work here (iproute2 missing?)");
  }
  if (RunCommand({"iptables", "--version"}, 10s).exit_code != 0) {
    return Status::Unavailable("iptables is missing (tools/install-deps.sh installs it)");
  }
  if (options.dir.empty()) return Status::InvalidArgument("BedOptions::dir is required");
  RemoveDeadRuns();
  InstallHooksOnce();
  std::unique_ptr<Bed> bed(new Bed(std::move(options)));
  {
    std::lock_guard lock(registry_mu);
    Registry().insert(bed.get());
  }
  if (Status s = bed->Setup(); !s.ok()) {
    bed->Cleanup();
    return Status::Unavailable("cannot build the bed: " + s.ToString());
  }
  return bed;
}

Bed::~Bed() {
  Cleanup();
  std::lock_guard lock(registry_mu);
  Registry().erase(this);
}

Status Bed::Setup() {
  // A /24 of 10.213.0.0/16 that no route of this host uses yet (another run's bridge, say).
  const std::string routes = RunCommand({"ip", "-4", "route", "show"}, 10s).out;
  const int first = static_cast<int>(getpid() % 250) + 1;
  for (int i = 0; i < 250 && subnet_ == 0; ++i) {
    const int s = (first + i) % 250 + 1;
    if (routes.find("10.213." + std::to_string(s) + ".0/24") == std::string::npos) subnet_ = s;
  }
  if (subnet_ == 0) return Status::Unavailable("no free /24 in 10.213.0.0/16");
  const std::string br = kPrefix + tag_hex_ + "-b";
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"ip", "link", "add", br, "type", "bridge"},
           {"ip", "addr", "add", "10.213." + std::to_string(subnet_) + ".1/24", "dev", br},
           {"ip", "link", "set", br, "up"}}) {
    Command c = RunCommand(argv, 10s);
    if (c.exit_code != 0) return Status::Unavailable(argv[0] + " " + argv[1] + ": " + c.out);
    bridge_made_ = true;
  }
  for (int i = 0; i < options_.hosts; ++i) SHARDKV_RETURN_IF_ERROR(AddHostLocked());
  const Command help = RunCommand({options_.node_path, "--help"}, 10s);
  node_has_insecure_ = help.out.find("--insecure") != std::string::npos;
  node_has_secret_flag_ = help.out.find("--auth-secret-file") != std::string::npos;
  return Status::OK();
}

StatusOr<int> Bed::AddHost() {
  SHARDKV_RETURN_IF_ERROR(AddHostLocked());
  return hosts();
}

Status Bed::AddHostLocked() {
  const int host = hosts() + 1;
  if (host > 15) return Status::InvalidArgument("the bed has at most 15 hosts");
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "%x", host);
  const std::string ns = std::string(kPrefix) + "-" + tag_ + "-h" + std::to_string(host);
  const std::string veth = kPrefix + tag_hex_ + "-" + suffix;
  const std::string br = kPrefix + tag_hex_ + "-b";
  Command made = RunCommand({"ip", "netns", "add", ns}, 10s);
  if (made.exit_code != 0) return Status::Unavailable("ip netns add " + ns + ": " + made.out);
  namespaces_.push_back(ns);
  nodes_.push_back(nullptr);
  for (const auto& argv : std::vector<std::vector<std::string>>{
           // The peer is made inside the namespace directly, so no second root-side name exists.
           {"ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
           {"ip", "link", "set", veth, "master", br},
           {"ip", "link", "set", veth, "up"},
           {"ip", "-n", ns, "addr", "add", Ip(host) + "/24", "dev", "eth0"},
           {"ip", "-n", ns, "link", "set", "eth0", "up"},
           {"ip", "-n", ns, "link", "set", "lo", "up"}}) {
    Command c = RunCommand(argv, 10s);
    if (c.exit_code != 0) {
      std::string text;
      for (const std::string& a : argv) text += a + " ";
      return Status::Unavailable(text + ": " + c.out);
    }
  }
  return Status::OK();
}

std::string Bed::Ip(int host) const {
  return "10.213." + std::to_string(subnet_) + "." + std::to_string(10 + host);
}

std::vector<std::string> Bed::Addresses(const std::vector<int>& hosts) const {
  std::vector<std::string> out;
  for (int h : hosts) out.push_back(Address(h));
  return out;
}

std::string Bed::AllAddresses() const {
  std::string out;
  for (int h = 1; h <= hosts(); ++h) out += (h > 1 ? "," : "") + Address(h);
  return out;
}

std::vector<std::string> Bed::InNamespace(int host, std::vector<std::string> argv) const {
  if (host == 0) return argv;
  std::vector<std::string> full{Which("ip"), "netns", "exec", Namespace(host)};
  full.insert(full.end(), argv.begin(), argv.end());
  return full;
}

Command Bed::Run(int host, const std::vector<std::string>& argv,
                 std::chrono::milliseconds limit) const {
  return RunCommand(InNamespace(host, argv), limit);
}

Command Bed::Cli(int host, const std::vector<std::string>& seeds,
                 const std::vector<std::string>& args, std::chrono::milliseconds limit) const {
  std::string joined;
  for (const std::string& s : seeds) joined += (joined.empty() ? "" : ",") + s;
  std::vector<std::string> argv{options_.cli_path, "--cluster", joined};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(host, argv, limit);
}

Status Bed::StartNode(int host, int skew_ms, const std::vector<std::string>& extra) {
  if (host < 1 || host > hosts()) return Status::InvalidArgument("no host " + std::to_string(host));
  if (NodeRunning(host)) return Status::FailedPrecondition("node already runs");
  const std::string data = options_.dir + "/n" + std::to_string(host);
  fs::create_directories(data);
  fs::remove(data + "/port");
  std::vector<std::string> argv{Which("ip"), "netns", "exec", Namespace(host)};
  if (skew_ms != 0) {
    // `env` and `ip netns exec` both exec, so the pid is the node's: SIGSTOP reaches it.
    char offset[32];
    std::snprintf(offset, sizeof(offset), "%+.3f", skew_ms / 1000.0);
    argv.insert(argv.end(), {"env", std::string("LD_PRELOAD=") + kFaketimeLib,
                             std::string("FAKETIME=") + offset, "FAKETIME_DONT_FAKE_MONOTONIC=1"});
  }
  argv.insert(argv.end(), {options_.node_path, "--id", std::to_string(host), "--listen",
                           Address(host), "--data", data});
  if (node_has_secret_flag_ && !options_.secret_file.empty()) {
    argv.insert(argv.end(), {"--auth-secret-file", options_.secret_file});
  } else if (node_has_insecure_) {
    argv.push_back("--insecure");
  }
  argv.insert(argv.end(), options_.node_args.begin(), options_.node_args.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto& slot = nodes_[host - 1];
  slot = std::make_unique<NodeProcess>();
  slot->process = std::make_unique<testing::BackgroundProcess>(
      argv, options_.dir + "/node" + std::to_string(host) + ".log");
  // Ready once it wrote DATA/port (after it joined its peers' map, or timed that out).
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!fs::exists(data + "/port")) {
    if (!slot->process->running() || slot->process->Wait(0ms) != -1 ||
        std::chrono::steady_clock::now() > deadline) {
      return Status::Unavailable("node " + std::to_string(host) + " did not start; see " +
                                 options_.dir + "/node" + std::to_string(host) + ".log");
    }
    std::this_thread::sleep_for(20ms);
  }
  return Status::OK();
}

bool Bed::NodeRunning(int host) const {
  const auto& slot = nodes_.at(host - 1);
  return slot && slot->process->running();
}

StatusOr<int64_t> Bed::ObservedSkewMs(int host) const {
  // The newest stamped line of the node's log against the file's modification time: the node
  // stamps its lines with its own (skewed) clock, the kernel stamps the write with the real one,
  // so no polling delay of this process enters (comparing with this process's clock did: 331 ms
  // off under load). Read between two equal modification times, so no line was written meanwhile.
  const std::string path = options_.dir + "/node" + std::to_string(host) + ".log";
  for (int attempt = 0; attempt < 20; ++attempt) {
    struct stat before {};
    if (::stat(path.c_str(), &before) != 0) break;
    std::ifstream log(path);
    std::string line;
    std::optional<std::chrono::system_clock::time_point> newest;
    while (std::getline(log, line)) {
      // "2026-12-01T19:40:01.123 info [node 3] ...", in local time (spdlog).
      std::tm tm{};
      int millis = 0;
      if (line.size() < 23 || strptime(line.c_str(), "%Y-%m-%dT%H:%M:%S", &tm) == nullptr ||
          std::sscanf(line.c_str() + 20, "%3d", &millis) != 1) {
        continue;
      }
      tm.tm_isdst = -1;
      newest = std::chrono::system_clock::from_time_t(std::mktime(&tm)) +
               std::chrono::milliseconds(millis);
    }
    struct stat after {};
    if (::stat(path.c_str(), &after) != 0) break;
    if (before.st_mtim.tv_sec != after.st_mtim.tv_sec ||
        before.st_mtim.tv_nsec != after.st_mtim.tv_nsec) {
      std::this_thread::sleep_for(20ms);  // a line was written meanwhile: read again
      continue;
    }
    if (!newest) break;
    const auto written = std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(after.st_mtim.tv_sec) +
            std::chrono::nanoseconds(after.st_mtim.tv_nsec)));
    return std::chrono::duration_cast<std::chrono::milliseconds>(*newest - written).count();
  }
  return Status::NotFound("no stamped line in node " + std::to_string(host) +
                          "'s log, or it kept changing");
}

void Bed::KillNode(int host) {
  auto& slot = nodes_.at(host - 1);
  if (!slot) return;
  slot->process->Signal(SIGKILL);
  slot->process->Wait(10s);
  slot.reset();
}

int Bed::StopNode(int host, std::chrono::milliseconds limit) {
  auto& slot = nodes_.at(host - 1);
  if (!slot) return -1;
  slot->process->Signal(SIGTERM);
  // The node bounds its own shutdown (5 s, then it exits 1); `limit` only guards the bed.
  int code = slot->process->Wait(limit);
  if (slot->process->running()) {
    slot->process->Signal(SIGKILL);
    slot->process->Wait(10s);
    code = -1;
  }
  slot.reset();
  return code;
}

void Bed::PauseNode(int host) {
  if (NodeRunning(host)) nodes_[host - 1]->process->Signal(SIGSTOP);
}

void Bed::ResumeNode(int host) {
  if (NodeRunning(host)) nodes_[host - 1]->process->Signal(SIGCONT);
}

Status Bed::RestartNode(int host, int skew_ms) {
  KillNode(host);
  return StartNode(host, skew_ms);
}

void Bed::Cleanup() {
  for (int h = 1; h <= hosts(); ++h) {
    ResumeNode(h);  // a stopped process takes SIGKILL too, but reaping is quicker this way
    KillNode(h);
  }
  for (const std::string& ns : namespaces_) {
    // Anything else a scenario started inside (a workload) goes with it.
    for (const std::string& p : Lines(RunCommand({"ip", "netns", "pids", ns}, 10s).out)) {
      if (const long pid = std::atol(p.c_str()); pid > 0) kill(static_cast<pid_t>(pid), SIGKILL);
    }
    RunCommand({"ip", "netns", "delete", ns}, 10s);
  }
  // The kernel destroys a namespace (and the veth pairs in it) asynchronously: delete the
  // root-side ends now, so that nothing of the run is left when Cleanup() returns.
  for (int h = 1; h <= static_cast<int>(namespaces_.size()); ++h) {
    char suffix[16];
    std::snprintf(suffix, sizeof(suffix), "%x", h);
    const std::string veth = kPrefix + tag_hex_ + "-" + suffix;
    if (RunCommand({"ip", "link", "show", veth}, 10s).exit_code == 0) {
      RunCommand({"ip", "link", "delete", veth}, 10s);
    }
  }
  namespaces_.clear();
  nodes_.clear();
  if (bridge_made_) {
    RunCommand({"ip", "link", "delete", kPrefix + tag_hex_ + "-b"}, 10s);
    bridge_made_ = false;
  }
}

std::vector<std::string> Bed::Leftovers() const {
  std::vector<std::string> left;
  for (const std::string& line : Lines(RunCommand({"ip", "netns", "list"}, 10s).out)) {
    if (line.rfind(std::string(kPrefix) + "-" + tag_ + "-", 0) == 0) left.push_back(line);
  }
  for (const std::string& line : Lines(RunCommand({"ip", "-o", "link", "show"}, 10s).out)) {
    if (line.find(": " + std::string(kPrefix) + tag_hex_ + "-") != std::string::npos) {
      left.push_back(line.substr(0, 60));
    }
  }
  return left;
}

}  // namespace shardkv::multihost
