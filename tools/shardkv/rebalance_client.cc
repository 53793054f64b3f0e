#include "rebalance_client.h"

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "local_cluster.h"

namespace shardkv::cli {

using rebalance::ChangeState;
using rebalance::RebalanceReport;

AdminClient::AdminClient(uint64_t cluster_id, std::string origin)
    : pool_(std::make_unique<PeerPool>(1)), cluster_id_(cluster_id), origin_(std::move(origin)) {}

AdminClient ClientFor(const GlobalOptions& g, const std::string& dir) {
  const uint64_t id = DirClusterId(g, dir);
  return AdminClient(id, id != 0 ? "the cluster in " + ClusterConfPath(dir) : "");
}

StatusOr<net::ResponseBody> AdminClient::CallAnyCluster(const std::string& address,
                                                        net::RequestBody body,
                                                        std::chrono::milliseconds timeout,
                                                        bool* unreachable) {
  if (unreachable != nullptr) *unreachable = false;
  net::Request request;
  request.body = std::move(body);
  auto response = pool_->CallSync(address, std::move(request), timeout);
  if (!response.ok()) {
    if (unreachable != nullptr) *unreachable = true;
    // The pool's errors usually name the address already.
    if (response.status().message().find(address) != std::string::npos) return response.status();
    return response.status().WithContext(address);
  }
  if (!response->ok()) return response->status();
  return std::move(response->body);
}

std::optional<uint64_t> AdminClient::ClusterIdOf(const std::string& address,
                                                 std::chrono::milliseconds timeout,
                                                 bool* unreachable) {
  auto body = CallAnyCluster(address, net::GetClusterMapRequest{}, timeout, unreachable);
  if (!body.ok()) return std::nullopt;
  const auto* m = std::get_if<net::GetClusterMapResponse>(&*body);
  if (m == nullptr) return std::nullopt;
  auto map = ClusterMap::Decode(m->map);
  if (!map.ok()) return std::nullopt;
  return map->cluster_id();
}

StatusOr<net::ResponseBody> AdminClient::Call(const std::string& address, net::RequestBody body,
                                              std::chrono::milliseconds timeout, bool* unreachable,
                                              bool* foreign) {
  if (unreachable != nullptr) *unreachable = false;
  if (foreign != nullptr) *foreign = false;
  if (cluster_id_ == 0) {
    // Adopt the first answering node's cluster; every later request must reach that cluster.
    bool down = false;
    const auto id = ClusterIdOf(address, timeout, &down);
    if (down) {
      if (unreachable != nullptr) *unreachable = true;
      return Status::Unavailable(address + " did not answer");
    }
    if (id && *id != 0) {
      cluster_id_ = *id;
      origin_ = "the cluster of " + address + " (the first node that answered)";
    }
  }
  net::Request request;
  request.body = std::move(body);
  request.cluster_id = cluster_id_;
  auto response = pool_->CallSync(address, std::move(request), timeout);
  if (!response.ok()) {
    if (unreachable != nullptr) *unreachable = true;
    if (response.status().message().find(address) != std::string::npos) return response.status();
    return response.status().WithContext(address);
  }
  if (!response->ok()) {
    ::shardkv::Status s = response->status();
    // A node of another cluster refuses the request (FailedPrecondition): confirm from its map
    // and say which two clusters are involved, whatever the node's own wording.
    if (s.code() == Status::Code::kFailedPrecondition && cluster_id_ != 0) {
      if (auto id = ClusterIdOf(address, timeout); id && *id != cluster_id_) {
        if (foreign != nullptr) *foreign = true;
        return Status::FailedPrecondition(address + " belongs to cluster " + std::to_string(*id) +
                                          ", not to cluster " + std::to_string(cluster_id_) +
                                          (origin_.empty() ? "" : " (" + origin_ + ")") +
                                          "; another cluster may have taken this cluster's ports");
      }
    }
    return s;
  }
  return std::move(response->body);
}

AdminReply AdminClient::Send(const std::string& address, const std::string& command,
                             const AdminArgs& args, std::chrono::milliseconds timeout) {
  AdminReply out;
  out.address = address;
  auto body =
      Call(address, net::AdminRequest{command, args}, timeout, &out.unreachable, &out.foreign);
  if (!body.ok()) {
    out.status = body.status();
    return out;
  }
  const auto* admin = std::get_if<net::AdminResponse>(&*body);
  if (admin == nullptr) {
    out.status = Status::Corruption(address + " sent an unexpected reply to '" + command + "'");
    return out;
  }
  auto report = RebalanceReport::Decode(admin->payload);
  if (!report.ok()) {
    out.status = report.status().WithContext(address);
    return out;
  }
  out.report = std::move(report).value();
  return out;
}

AdminReply AdminClient::SendFirst(const std::vector<std::string>& addresses,
                                  const std::string& command, const AdminArgs& args,
                                  std::chrono::milliseconds timeout) {
  std::string tried;
  bool foreign = false;
  for (const std::string& a : addresses) {
    AdminReply r = Send(a, command, args, timeout);
    if (!r.unreachable && !r.foreign) return r;
    foreign = foreign || r.foreign;
    tried += (tried.empty() ? "" : "; ") + r.status.message();
  }
  AdminReply none;
  none.unreachable = true;
  none.foreign = foreign;
  const std::string who = cluster_id_ != 0 ? "no node of cluster " + std::to_string(cluster_id_)
                                           : std::string("no node");
  none.status =
      Status::Unavailable(addresses.empty() ? "no node to ask" : who + " answered (" + tried + ")");
  return none;
}

AdminReply AdminClient::Status(const std::vector<std::string>& addresses,
                               const std::string& preferred, std::chrono::milliseconds timeout) {
  std::vector<std::string> order;
  if (!preferred.empty()) order.push_back(preferred);
  for (const auto& a : addresses) {
    if (a != preferred) order.push_back(a);
  }
  AdminReply first = SendFirst(order, "status", {}, timeout);
  if (!first.status.ok() || first.report.from_driver || first.report.driver_address.empty() ||
      first.report.driver_address == first.address) {
    return first;
  }
  AdminReply driver = Send(first.report.driver_address, "status", {}, timeout);
  // A driver that answers with an older map than the first node (it was replaced, or it is a
  // removed node that learns nothing more) does not win.
  if (driver.status.ok() && driver.report.epoch >= first.report.epoch) return driver;
  return first;
}

AdminReply AdminClient::SendToDriver(const std::vector<std::string>& addresses,
                                     const std::string& command, const AdminArgs& args,
                                     std::chrono::milliseconds timeout) {
  AdminReply status = Status(addresses, "", timeout);
  if (!status.status.ok()) return status;
  return Send(status.address, command, args, timeout);
}

StatusOr<ClusterMap> AdminClient::NewestMap(const std::vector<std::string>& addresses,
                                            uint64_t cluster_id,
                                            std::chrono::milliseconds timeout) {
  std::optional<ClusterMap> best;
  std::string errors;
  if (cluster_id_ == 0) cluster_id_ = cluster_id;
  for (const auto& a : addresses) {
    auto body = Call(a, net::GetClusterMapRequest{}, timeout);
    if (!body.ok()) {
      errors += (errors.empty() ? "" : "; ") + body.status().message();
      continue;
    }
    const auto* m = std::get_if<net::GetClusterMapResponse>(&*body);
    if (m == nullptr) continue;
    auto map = ClusterMap::Decode(m->map);
    if (!map.ok()) continue;
    if (cluster_id_ != 0 && map->cluster_id() != cluster_id_) {
      errors += (errors.empty() ? "" : "; ") + a + " belongs to cluster " +
                std::to_string(map->cluster_id()) + ", not to cluster " +
                std::to_string(cluster_id_);
      continue;
    }
    if (!best || map->epoch() > best->epoch()) best = std::move(map).value();
  }
  if (best) return std::move(*best);
  return Status::Unavailable((cluster_id_ != 0 ? "no node of cluster " + std::to_string(cluster_id_)
                                               : std::string("no node of the cluster")) +
                             " answered" + (errors.empty() ? std::string() : " (" + errors + ")"));
}

int64_t AdminClient::SumClientErrors(const std::vector<std::string>& addresses,
                                     std::chrono::milliseconds timeout) {
  int64_t sum = 0;
  for (const auto& a : addresses) {
    auto body = Call(a, net::StatsRequest{}, timeout);
    if (!body.ok()) continue;
    if (const auto* s = std::get_if<net::StatsResponse>(&*body)) {
      if (auto it = s->counters.find("client_errors"); it != s->counters.end()) sum += it->second;
    }
  }
  return sum;
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

std::optional<std::string> RetireRemovedNode(const GlobalOptions& g, const std::string& dir,
                                             const RebalanceReport& report) {
  // A node that left (remove done) or never joined (add cancelled) is no member any more.
  const bool removed = report.record.kind == "remove" && report.record.state == ChangeState::kDone;
  const bool not_added =
      report.record.kind == "add" && report.record.state == ChangeState::kCancelled;
  if (!g.cluster.empty() || !report.has_change || (!removed && !not_added)) return std::nullopt;
  const uint32_t id = report.record.node_id;
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

uint64_t MovedCopies(const RebalanceReport& r) {
  return std::max(r.copies_done, r.record.moved_copies);
}
uint64_t MovedBytes(const RebalanceReport& r) {
  return std::max(r.bytes_done, r.record.moved_bytes);
}

std::optional<RebalanceReport> AwaitEffect(
    AdminClient* client, const std::vector<std::string>& addresses,
    const std::function<bool(const RebalanceReport&)>& took_effect, std::chrono::milliseconds wait,
    std::chrono::milliseconds timeout) {
  std::optional<RebalanceReport> seen;
  PollUntil(
      SteadyClock::now() + wait,
      [&] {
        AdminReply r = client->Status(addresses, "", timeout);
        if (r.status.ok() && took_effect(r.report)) seen = r.report;
        return seen.has_value();
      },
      std::chrono::milliseconds(250));
  return seen;
}

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

std::string DescribeChange(const rebalance::ChangeRecord& r) {
  return r.kind + " node " + std::to_string(r.node_id);
}

std::string StateName(const RebalanceReport& r) {
  return r.has_change ? std::string(rebalance::ChangeStateName(r.record.state)) : "none";
}

bool ChangeEnded(const RebalanceReport& r) {
  const ChangeState s = r.record.state;
  return s == ChangeState::kDone || s == ChangeState::kFailed || s == ChangeState::kCancelled;
}

}  // namespace shardkv::cli
