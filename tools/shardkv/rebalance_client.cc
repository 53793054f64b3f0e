#include "rebalance_client.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cli_common.h"
#include "local_cluster.h"

namespace shardkv::cli {

std::string SteerCommand::Name() const {
  switch (kind) {
    case Kind::kCancel:
      return "cancel";
    case Kind::kResume:
      return "resume";
    case Kind::kThrottle:
      return "throttle";
  }
  return "?";
}

std::unique_ptr<Admin> AdminFor(const GlobalOptions& g, const std::string& dir) {
  AdminOptions o;
  // --cluster-id (or the profile's) wins, as for the data commands (GlobalOptions::Expected).
  if (g.cluster_id != 0) {
    o.cluster_id = g.cluster_id;
    o.cluster_origin = "the --cluster-id given";
  } else {
    o.cluster_id = DirClusterId(g, dir);
    if (o.cluster_id != 0) o.cluster_origin = "the cluster in " + ClusterConfPath(dir);
  }
  g.credentials.ApplyTo(&o);
  // No seeds (each call names its nodes). Create fails if a TLS file cannot be used (or the
  // secret file, checked when the flags were parsed, vanished since).
  auto admin = Admin::Create(std::move(o));
  if (!admin.ok()) std::exit(ReportError(admin.status(), kExitUsage));
  return std::move(admin).value();
}

AdminCallOptions CallTo(const std::vector<std::string>& seeds, std::chrono::milliseconds t) {
  const auto ms = static_cast<uint32_t>(std::max<int64_t>(1, t.count()));
  return AdminCallOptions{seeds, ms, ms};
}

AdminReply Steer(Admin* admin, const std::string& driver, const SteerCommand& command,
                 std::chrono::milliseconds timeout) {
  const AdminCallOptions call = CallTo({driver}, timeout);
  switch (command.kind) {
    case SteerCommand::Kind::kCancel:
      return admin->Cancel(driver, call);
    case SteerCommand::Kind::kResume:
      return admin->Resume(driver, call);
    case SteerCommand::Kind::kThrottle:
      break;
  }
  return admin->SetThrottle(command.rate_bytes_per_s, command.streams_per_node, driver, call);
}

ChangeEffect EffectOf(const SteerCommand& command, const ChangeReport& before) {
  switch (command.kind) {
    case SteerCommand::Kind::kCancel:
      return ChangeEffect::Cancel(before);
    case SteerCommand::Kind::kResume:
      return ChangeEffect::Resume(before);
    case SteerCommand::Kind::kThrottle:
      break;
  }
  return ChangeEffect::Throttle(before, command.rate_bytes_per_s, command.streams_per_node);
}

std::vector<std::string> AdminAddresses(const GlobalOptions& g, const std::string& dir,
                                        const std::set<uint32_t>& exclude) {
  if (!g.cluster.empty()) return g.cluster;
  std::vector<std::string> out;
  for (uint32_t id : ListNodeIds(dir)) {
    if (exclude.count(id) != 0) continue;
    const std::string node_dir = NodeDir(dir, id);
    std::optional<uint16_t> port = ReadPortFile(node_dir);
    if (!port) {
      if (auto args = ReadArgsFile(node_dir); args.ok()) port = ListenPortInArgs(*args);
    }
    if (port && *port != 0) out.push_back("127.0.0.1:" + std::to_string(*port));
  }
  return out;
}

uint64_t DirClusterId(const GlobalOptions& g, const std::string& dir) {
  if (!g.cluster.empty()) return 0;
  auto conf = ReadClusterConf(dir);
  return conf.ok() ? conf->cluster_id : 0;
}

std::vector<std::string> MemberAddresses(const ClusterMap& map, const std::set<uint32_t>& exclude) {
  std::vector<const ClusterNode*> nodes;
  for (const ClusterNode& n : map.nodes()) {
    if (exclude.count(n.id) == 0) nodes.push_back(&n);
  }
  std::stable_sort(nodes.begin(), nodes.end(), [](const ClusterNode* a, const ClusterNode* b) {
    const bool up_a = a->state == NodeState::kUp, up_b = b->state == NodeState::kUp;
    return up_a != up_b ? up_a : a->id < b->id;
  });
  std::vector<std::string> out;
  for (const ClusterNode* n : nodes) out.push_back(n->address);
  return out;
}

void RecordNodeCount(const std::string& dir) {
  auto conf = ReadClusterConf(dir);
  if (!conf.ok()) return;
  conf->nodes = static_cast<uint32_t>(ListNodeIds(dir).size());
  (void)WriteClusterConf(dir, *conf);
}

std::optional<uint32_t> NodeThatLeft(const ChangeReport& report) {
  // A node that left (remove done) or never joined (add cancelled) is no member any more.
  const bool removed =
      report.record.kind == ChangeKind::kRemove && report.record.state == ChangeState::kDone;
  const bool not_added =
      report.record.kind == ChangeKind::kAdd && report.record.state == ChangeState::kCancelled;
  if (!report.has_change || (!removed && !not_added)) return std::nullopt;
  return report.record.node_id;
}

std::optional<std::string> RetireRemovedNode(const GlobalOptions& g, const std::string& dir,
                                             const ChangeReport& report) {
  const std::optional<uint32_t> left = NodeThatLeft(report);
  if (!g.cluster.empty() || !left) return std::nullopt;
  const bool removed = report.record.kind == ChangeKind::kRemove;
  const uint32_t id = *left;
  const std::string node_dir = NodeDir(dir, id);
  const auto all = ListAllNodeIds(dir);
  if (std::find(all.begin(), all.end(), id) == all.end() || NodeRemoved(node_dir)) {
    return std::nullopt;
  }
  auto lock = DirLock::Acquire(dir);
  if (!lock.ok()) return std::nullopt;  // another launcher works on it: the next call retries
  std::string line =
      "node " + std::to_string(id) +
      (removed ? " left the cluster (change " : " was not added (cancelled change ") +
      std::to_string(report.record.change_id) + ")";
  if (auto pid = RunningNodePid(node_dir)) {
    auto out = StopNodes(dir, {{id, *pid}}, SIGTERM, SteadyClock::now() + std::chrono::seconds(20),
                         true, std::chrono::seconds(5));
    if (!out.front().stopped) {
      return line + ", but its process (pid " + std::to_string(*pid) +
             ") did not exit; stop it with 'shardkv cluster stop-node " + std::to_string(id) +
             " --kill'";
    }
    line += ": stopped its process (pid " + std::to_string(*pid) +
            (out.front().needed_kill ? ", SIGKILL" : ", SIGTERM") + ")";
  } else {
    line += " (its process was not running)";
  }
  if (Status s = WriteTextFile(RemovedMarkerPath(node_dir),
                               "change " + std::to_string(report.record.change_id) + "\n");
      !s.ok()) {
    return line + "; could not mark " + node_dir + " removed: " + s.message();
  }
  RecordNodeCount(dir);
  return line + " and marked " + node_dir + " removed (data kept)";
}

uint64_t MovedCopies(const ChangeReport& r) {
  return std::max(r.copies_done, r.record.moved_copies);
}
uint64_t MovedBytes(const ChangeReport& r) { return std::max(r.bytes_done, r.record.moved_bytes); }

std::string HumanBytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), u == 0 ? "%.0f %s" : "%.1f %s", bytes, units[u]);
  return buf;
}

std::string HumanSeconds(double s) {
  char buf[32];
  if (s < 0) s = 0;
  if (s < 10) {
    std::snprintf(buf, sizeof(buf), "%.1fs", s);
  } else if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%.0fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%dh%02dm", static_cast<int>(s) / 3600,
                  static_cast<int>(s) % 3600 / 60);
  }
  return buf;
}

std::string DriverAddress(const ChangeReport& r, const ClusterMap* map,
                          const std::string& answered) {
  if (!r.driver_address.empty()) return r.driver_address;
  if (map != nullptr) {
    if (const ClusterNode* n = map->FindNode(r.driver)) return n->address;
  }
  return answered;
}

std::string DescribeChange(const ChangeRecord& r) {
  if (r.kind == ChangeKind::kParams) {
    // Configured values: the effective ones are capped by the node count (shown by the plan).
    auto step = [](const char* what, uint32_t before, uint32_t after) {
      return std::string(what) + " " + std::to_string(before) +
             (before == after ? "" : " -> " + std::to_string(after));
    };
    return "set " + step("replicas", r.replicas_configured, r.params_replicas) + ", " +
           step("write quorum", r.write_quorum_before, r.params_write_quorum) + ", " +
           step("read quorum", r.read_quorum_before, r.params_read_quorum);
  }
  return std::string(ChangeKindName(r.kind)) + " node " + std::to_string(r.node_id);
}

std::string StateName(const ChangeReport& r) {
  return r.has_change ? std::string(ChangeStateName(r.record.state)) : "none";
}

}  // namespace shardkv::cli
