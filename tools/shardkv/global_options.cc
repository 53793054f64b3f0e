#include "global_options.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli_common.h"

namespace shardkv::cli {

namespace fs = std::filesystem;

void GlobalOptions::Register(CLI::App& app) {
  app.fallthrough();
  app.add_option("--cluster", cluster, "Node addresses (host:port), comma separated")
      ->delimiter(',');
  app.add_option("--dir", dir,
                 "Local cluster directory (default: $SHARDKV_DIR, else ~/.shardkv/local)");
  app.add_option("--timeout", timeout_ms, "Per-operation timeout in milliseconds, retries included")
      ->capture_default_str()
      ->check(CLI::Range(1u, 3600u * 1000u));
  app.add_option("--consistency", consistency, "one, quorum or all")
      ->capture_default_str()
      ->check(CLI::IsMember({"one", "quorum", "all"}));
}

std::string GlobalOptions::ClusterDir() const {
  if (!dir.empty()) return dir;
  if (const char* env = std::getenv("SHARDKV_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.shardkv/local";
}

StatusOr<std::vector<std::string>> GlobalOptions::Seeds() const {
  if (!cluster.empty()) return cluster;
  const std::string d = ClusterDir();
  std::vector<std::string> seeds;
  std::error_code ec;
  // A local cluster keeps each node in <dir>/node-<id>/, whose `port` file the node writes.
  for (const auto& entry : fs::directory_iterator(d, ec)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("node-", 0) != 0) {
      continue;
    }
    // A node removed from the cluster (`cluster remove-node`) is no seed any more.
    if (fs::exists(entry.path() / "removed", ec)) continue;
    std::ifstream in(entry.path() / "port");
    int port = 0;
    if (in >> port && port > 0) seeds.push_back("127.0.0.1:" + std::to_string(port));
  }
  if (seeds.empty()) {
    return Status::Unavailable("no --cluster given and no running cluster found in " + d +
                               " (start one with 'shardkv cluster up')");
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

StatusOr<std::unique_ptr<Client>> GlobalOptions::Connect() const {
  auto seeds = Seeds();
  if (!seeds.ok()) return seeds.status();
  ClientOptions o;
  o.seeds = std::move(seeds).value();
  o.timeout_ms = timeout_ms;
  auto c = ParseConsistency(consistency);
  if (!c.ok()) return c.status();
  o.consistency = *c;
  return Client::Connect(std::move(o));
}

int ExitCodeFor(const Status& status) {
  switch (status.code()) {
    case Status::Code::kOk:
      return kExitOk;
    case Status::Code::kInvalidArgument:
      return kExitUsage;
    case Status::Code::kUnavailable:
    case Status::Code::kTimeout:
      return kExitUnreachable;
    default:
      return kExitFailed;
  }
}

}  // namespace shardkv::cli
