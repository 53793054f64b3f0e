// The files of a local cluster directory (cluster_dir.h): cluster.conf, node directories, pid,
// port and stopped_at files. Split from local_cluster.cc, which keeps the processes.
#include "cluster_dir.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

namespace shardkv::cli {

namespace fs = std::filesystem;

namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

template <typename T>
std::optional<T> ParseNumber(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  T v;
  if constexpr (std::is_unsigned_v<T>) {
    if (text[0] == '-') return std::nullopt;  // strtoull would wrap it around
    v = static_cast<T>(std::strtoull(text.c_str(), &end, 10));
  } else {
    v = static_cast<T>(std::strtoll(text.c_str(), &end, 10));
  }
  if (errno != 0 || end == text.c_str() || (*end != '\0' && *end != '\n' && *end != ' ')) {
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::string ClusterConfPath(const std::string& dir) { return dir + "/cluster.conf"; }

Status WriteClusterConf(const std::string& dir, const ClusterConf& c) {
  std::ostringstream out;
  out << "# Written by 'shardkv cluster up'; read by the other 'shardkv cluster' commands.\n"
      << "nodes=" << c.nodes << "\nmode=" << c.mode << "\nreplicas=" << c.replicas
      << "\nwrite_quorum=" << c.write_quorum << "\nread_quorum=" << c.read_quorum
      << "\nvnodes=" << c.vnodes << "\nshards=" << c.shards
      << "\ntombstone_grace_s=" << c.tombstone_grace_s << "\ncluster_id=" << c.cluster_id
      << "\nformed=" << (c.formed ? 1 : 0) << "\nbase_port=" << c.base_port << "\n";
  return WriteTextFile(ClusterConfPath(dir), out.str());
}

StatusOr<ClusterConf> ReadClusterConf(const std::string& dir) {
  const std::string path = ClusterConfPath(dir);
  std::ifstream in(path);
  if (!in) return Status::NotFound("no " + path);
  ClusterConf c;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return Status::Corruption(path + ": bad line '" + line + "'");
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "mode") {
      c.mode = value;
      continue;
    }
    if (key == "base_port") {
      auto p = ParseNumber<int64_t>(value);
      if (!p || *p < -1 || *p > 65535) {
        return Status::Corruption(path + ": bad value in '" + line + "'");
      }
      c.base_port = static_cast<int>(*p);
      continue;
    }
    auto n = ParseNumber<uint64_t>(value);
    if (!n) return Status::Corruption(path + ": bad value in '" + line + "'");
    if (key == "nodes") c.nodes = static_cast<uint32_t>(*n);
    if (key == "replicas") c.replicas = static_cast<uint32_t>(*n);
    if (key == "write_quorum") c.write_quorum = static_cast<uint32_t>(*n);
    if (key == "read_quorum") c.read_quorum = static_cast<uint32_t>(*n);
    if (key == "vnodes") c.vnodes = static_cast<uint32_t>(*n);
    if (key == "shards") c.shards = static_cast<uint32_t>(*n);
    if (key == "tombstone_grace_s") c.tombstone_grace_s = *n;
    if (key == "cluster_id") c.cluster_id = *n;
    if (key == "formed") c.formed = *n != 0;
    // Unknown keys are ignored, so a newer launcher's file still reads.
  }
  return c;
}

std::string NodeDir(const std::string& dir, uint32_t id) {
  return dir + "/node-" + std::to_string(id);
}

std::string AbsoluteDir(const std::string& dir) {
  std::error_code ec;
  fs::path abs = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  std::string out = (ec ? fs::path(dir) : abs).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string RemovedMarkerPath(const std::string& node_dir) { return node_dir + "/removed"; }

bool NodeRemoved(const std::string& node_dir) {
  std::error_code ec;
  return fs::exists(RemovedMarkerPath(node_dir), ec);
}

std::vector<uint32_t> ListNodeIds(const std::string& dir) {
  std::vector<uint32_t> ids;
  for (uint32_t id : ListAllNodeIds(dir)) {
    if (!NodeRemoved(NodeDir(dir, id))) ids.push_back(id);
  }
  return ids;
}

std::vector<uint32_t> ListAllNodeIds(const std::string& dir) {
  std::vector<uint32_t> ids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node-", 0) != 0 || !entry.is_directory(ec)) continue;
    auto id = ParseNumber<int64_t>(name.substr(5));
    if (id && *id > 0 && *id <= UINT32_MAX && name.substr(5) == std::to_string(*id)) {
      ids.push_back(static_cast<uint32_t>(*id));
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<pid_t> ReadPidFile(const std::string& node_dir) {
  auto pid = ParseNumber<pid_t>(ReadFirstLine(node_dir + "/pid"));
  if (!pid || *pid <= 0) return std::nullopt;
  return pid;
}

std::optional<uint16_t> ReadPortFile(const std::string& node_dir) {
  auto port = ParseNumber<int64_t>(ReadFirstLine(node_dir + "/port"));
  if (!port || *port <= 0 || *port > 65535) return std::nullopt;
  return static_cast<uint16_t>(*port);
}

std::optional<int64_t> ReadStoppedAt(const std::string& node_dir) {
  return ParseNumber<int64_t>(ReadFirstLine(node_dir + "/stopped_at"));
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  // A reader (another CLI invocation) never sees a half-written file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) return Status::IOError("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::IOError("cannot rename " + tmp + ": " + ec.message());
  return Status::OK();
}

void RemoveFile(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

}  // namespace shardkv::cli
