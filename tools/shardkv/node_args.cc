#include "node_args.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cluster_limits.h"
#include "local_cluster.h"
#include "shardkv/admin.h"
#include "shardkv/cluster_map.h"

namespace shardkv::cli {
namespace {

std::optional<int64_t> ParseInt(const std::string& text, int base = 10) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v, base);
  if (ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// The inode of the socket listening on 127.0.0.1:port (or 0.0.0.0:port), from /proc/net/tcp.
std::optional<std::string> ListeningInode(uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state, queues, timer, retr, uid, timeout, inode;
    if (!(fields >> slot >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >>
          inode)) {
      continue;
    }
    const size_t colon = local.find(':');
    if (colon == std::string::npos || state != "0A") continue;  // 0A: LISTEN
    auto p = ParseInt(local.substr(colon + 1), 16);
    if (p && *p == port) return inode;
  }
  return std::nullopt;
}

// The pid holding socket `inode` open, among the processes we may inspect.
std::optional<pid_t> PidWithSocket(const std::string& inode) {
  const std::string target = "socket:[" + inode + "]";
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<pid_t> found;
  while (dirent* e = readdir(proc)) {
    auto pid = ParseInt(e->d_name);
    if (!pid) continue;
    const std::string fd_dir = "/proc/" + std::string(e->d_name) + "/fd";
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    while (dirent* f = readdir(fds)) {
      char buf[64];
      const std::string path = fd_dir + "/" + f->d_name;
      const ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
      if (n > 0 && std::string(buf, static_cast<size_t>(n)) == target) {
        found = static_cast<pid_t>(*pid);
        break;
      }
    }
    closedir(fds);
    if (found) break;
  }
  closedir(proc);
  return found;
}

}  // namespace

Status WriteArgsFile(const std::string& node_dir, const std::vector<std::string>& args) {
  std::string text;
  for (const auto& a : args) {
    if (a.find('\n') != std::string::npos) {
      return Status::InvalidArgument("argument with a newline cannot be recorded: " + a);
    }
    text += a + "\n";
  }
  return WriteTextFile(node_dir + "/args", text);
}

StatusOr<std::vector<std::string>> ReadArgsFile(const std::string& node_dir) {
  std::ifstream in(node_dir + "/args");
  if (!in)
    return Status::NotFound("no " + node_dir + "/args (was the node started by 'cluster up'?)");
  std::vector<std::string> args;
  std::string line;
  while (std::getline(in, line)) args.push_back(line);
  if (args.empty()) return Status::Corruption(node_dir + "/args is empty");
  return args;
}

std::optional<uint16_t> ListenPortInArgs(const std::vector<std::string>& args) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--listen") continue;
    const size_t colon = args[i + 1].rfind(':');
    if (colon == std::string::npos) return std::nullopt;
    auto port = ParseInt(args[i + 1].substr(colon + 1));
    if (!port || *port < 0 || *port > 65535) return std::nullopt;
    return static_cast<uint16_t>(*port);
  }
  return std::nullopt;
}

std::vector<std::string> WithListenPort(std::vector<std::string> args, uint16_t port) {
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--listen") continue;
    const size_t colon = args[i + 1].rfind(':');
    const std::string host =
        colon == std::string::npos ? "127.0.0.1" : args[i + 1].substr(0, colon);
    args[i + 1] = host + ":" + std::to_string(port);
  }
  return args;
}

std::vector<std::string> WithRecordedPort(std::vector<std::string> args,
                                          const std::string& node_dir) {
  if (ListenPortInArgs(args) != uint16_t{0}) return args;
  const std::optional<uint16_t> recorded = ReadPortFile(node_dir);
  if (!recorded || *recorded == 0) return args;
  return WithListenPort(std::move(args), *recorded);
}

std::vector<std::string> WithoutFlag(std::vector<std::string> args, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;  // and its value
      continue;
    }
    out.push_back(std::move(args[i]));
  }
  return out;
}

std::vector<std::string> WithoutRebuildFlags(std::vector<std::string> args) {
  args = WithoutFlag(std::move(args), "--seeds");
  std::erase(args, std::string("--rebuild"));
  return args;
}

bool NodeSupportsClusterId(const std::string& binary) {
  static std::map<std::string, bool> cache;
  if (auto it = cache.find(binary); it != cache.end()) return it->second;
  std::string quoted = "'";
  for (char c : binary) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  bool found = false;
  if (FILE* p = popen((quoted + " --help 2>&1").c_str(), "r")) {
    std::string out;
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
    pclose(p);
    found = out.find("--cluster-id") != std::string::npos;
  }
  cache[binary] = found;
  return found;
}

std::vector<std::string> WithClusterId(std::vector<std::string> args, uint64_t cluster_id,
                                       const std::string& binary) {
  args = WithoutFlag(std::move(args), "--cluster-id");
  if (cluster_id == 0 || !NodeSupportsClusterId(binary)) return args;
  args.push_back("--cluster-id");
  args.push_back(std::to_string(cluster_id));
  return args;
}

// The port for a new node, the way `cluster up` chose them: 0 for --base-port 0, else the first
// free port from P + id - 1 (--base-port P) or from 7000, skipping ports other nodes of the
// directory are recorded with (a stopped node comes back on its port).
StatusOr<uint16_t> ChooseNewPort(const ClusterConf& conf, const std::string& dir, uint32_t id) {
  if (conf.base_port == 0) return uint16_t{0};
  std::set<uint32_t> reserved;
  for (uint32_t other : ListAllNodeIds(dir)) {
    if (auto args = ReadArgsFile(NodeDir(dir, other)); args.ok()) {
      if (auto p = ListenPortInArgs(*args)) reserved.insert(*p);
    }
    if (auto p = ReadPortFile(NodeDir(dir, other))) reserved.insert(*p);
  }
  uint32_t start = limits::kFirstDefaultPort;
  if (conf.base_port > 0 && conf.base_port + id - 1 <= 65535) start = conf.base_port + id - 1;
  for (uint32_t p = start; p <= 65535; ++p) {
    if (reserved.count(p) == 0 && PortFree(static_cast<uint16_t>(p))) {
      return static_cast<uint16_t>(p);
    }
  }
  return Status::ResourceExhausted("no free port from " + std::to_string(start) + " up");
}

// The new node's arguments: another member's, with its own id, data directory and port.
std::vector<std::string> NewNodeArgs(const std::string& dir, const ClusterConf& conf, uint32_t id,
                                     uint16_t port) {
  std::vector<std::string> args;
  for (uint32_t other : ListNodeIds(dir)) {
    if (auto a = ReadArgsFile(NodeDir(dir, other)); a.ok()) {
      args = std::move(a).value();
      break;
    }
  }
  if (args.empty()) {
    args = {"--id",
            "",
            "--data",
            "",
            "--listen",
            "",
            "--tombstone-grace",
            std::to_string(conf.tombstone_grace_s),
            "--metrics-listen",
            "127.0.0.1:0"};
  }
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--id") args[i + 1] = std::to_string(id);
    if (args[i] == "--data") args[i + 1] = NodeDir(dir, id);
  }
  // Every local node has a Redis listener (cluster up starts them so); a free port each.
  if (std::find(args.begin(), args.end(), "--redis-listen") == args.end()) {
    args.insert(args.end(), {"--redis-listen", "127.0.0.1:0"});
  }
  // A local cluster is a scratch cluster: FLUSHDB works there as on a local redis-server.
  if (std::find(args.begin(), args.end(), "--redis-allow-flush") == args.end()) {
    args.push_back("--redis-allow-flush");
  }
  // A fresh node: with the cluster id it would refuse its empty data directory. It gets the id
  // once its change began (then it is a member).
  return WithListenPort(WithoutRebuildFlags(WithoutFlag(std::move(args), "--cluster-id")), port);
}

std::string DescribePortHolder(uint16_t port) {
  std::string who;
  {
    AdminOptions o;
    o.timeout_ms = 1000;
    auto admin = Admin::Create(o);
    if (admin.ok()) {
      const NodeProbe p = (*admin)->Probe("127.0.0.1:" + std::to_string(port));
      if (const std::optional<ClusterMap>& map = p.map) {
        who = "a shardkv-node of cluster " + std::to_string(map->cluster_id());
        for (const ClusterNode& n : map->nodes()) {
          if (n.address == "127.0.0.1:" + std::to_string(port)) {
            who =
                "node " + std::to_string(n.id) + " of cluster " + std::to_string(map->cluster_id());
          }
        }
      }
    }
  }
  std::optional<pid_t> pid;
  if (auto inode = ListeningInode(port)) pid = PidWithSocket(*inode);
  if (who.empty()) who = "another process";
  if (pid) who += " (pid " + std::to_string(*pid) + ")";
  return who;
}

}  // namespace shardkv::cli
