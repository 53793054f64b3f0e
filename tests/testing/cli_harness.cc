#include "testing/cli_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

namespace shardkv::testing {
namespace {

std::string Join(const std::vector<std::string>& args) {
  std::string s;
  for (size_t i = 1; i < args.size(); ++i) s += (i > 1 ? " " : "") + args[i];
  return s;
}

void Explain(const std::vector<std::string>& argv, const ProcessResult& r) {
  UNSCOPED_INFO("$ shardkv " << Join(argv) << "\n-> exit " << r.exit_code << "\nstdout:\n"
                             << r.out << "stderr:\n"
                             << r.err);
}

}  // namespace

bool Alive(pid_t pid) {
  if (kill(pid, 0) != 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() ||
         (stat[paren + 2] != 'Z' && stat[paren + 2] != 'X');
}

std::optional<pid_t> ReadPid(const std::string& path) {
  std::ifstream in(path);
  long pid = 0;
  if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
  return std::nullopt;
}

size_t LineCount(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

LocalCluster::LocalCluster() {
  setenv("SHARDKV_NODE_BIN", SHARDKV_NODE_PATH, 1);
  const char* base = std::getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/shardkv-cli-XXXXXX";
  const char* made = mkdtemp(pattern.data());
  REQUIRE(made != nullptr);
  dir_ = made;
}

LocalCluster::~LocalCluster() {
  Run({"cluster", "down", "--wait", "10"});
  // Last resort if `down` itself failed: nothing may outlive the test.
  for (pid_t pid : Pids()) {
    if (Alive(pid)) kill(pid, SIGKILL);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::vector<std::string> LocalCluster::Argv(std::vector<std::string> args) const {
  args.insert(args.begin(), SHARDKV_CLI_PATH);
  args.push_back("--dir");
  args.push_back(dir_);
  return args;
}

ProcessResult LocalCluster::Run(std::vector<std::string> args) const {
  const auto argv = Argv(std::move(args));
  ProcessResult r = RunProcess(argv);
  Explain(argv, r);
  return r;
}

ProcessResult LocalCluster::RunWithInput(std::vector<std::string> args,
                                         const std::string& input) const {
  const auto argv = Argv(std::move(args));
  ProcessResult r = RunProcessWithInput(argv, input);
  Explain(argv, r);
  return r;
}

std::string LocalCluster::NodePort(int id) const {
  std::ifstream in(dir_ + "/node-" + std::to_string(id) + "/port");
  int port = 0;
  in >> port;
  return std::to_string(port);
}

std::vector<pid_t> LocalCluster::Pids() const {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
    if (auto pid = ReadPid((e.path() / "pid").string())) pids.push_back(*pid);
  }
  return pids;
}

std::string Field(const std::string& object, const std::string& key) {
  std::smatch m;
  const std::regex re("\"" + key + "\":(\"[^\"]*\"|[^,}\\]]*)");
  if (!std::regex_search(object, m, re)) return "";
  std::string v = m[1];
  if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

std::map<int, StatusNode> ParseStatus(const std::string& json) {
  std::map<int, StatusNode> nodes;
  const size_t begin = json.find("\"nodes\":[");
  REQUIRE(begin != std::string::npos);
  // The array's own closing bracket: a node object may hold arrays (gc_blocked_by).
  size_t end = std::string::npos;
  int depth = 0;
  for (size_t i = json.find('[', begin); i < json.size(); ++i) {
    if (json[i] == '[') ++depth;
    if (json[i] == ']' && --depth == 0) {
      end = i;
      break;
    }
  }
  REQUIRE(end != std::string::npos);
  const std::string array = json.substr(begin, end - begin);
  const std::regex object_re("\\{[^{}]*\\}");
  for (auto it = std::sregex_iterator(array.begin(), array.end(), object_re);
       it != std::sregex_iterator(); ++it) {
    const std::string o = it->str();
    StatusNode n;
    n.id = std::stoi(Field(o, "id"));
    n.state = Field(o, "state");
    n.alive = Field(o, "alive") == "true";
    const std::string share = Field(o, "share_pct");
    n.share_pct = share == "null" || share.empty() ? -1 : std::stod(share);
    const std::string keys = Field(o, "keys");
    n.keys = keys == "null" || keys.empty() ? -1 : std::stoll(keys);
    nodes[n.id] = n;
  }
  return nodes;
}

}  // namespace shardkv::testing
