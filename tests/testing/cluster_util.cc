#include "testing/cluster_util.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>
#include <utility>

#include "net/messages.h"
#include "net/rpc_client.h"
#include "testing/time_scale.h"

namespace shardkv::testing {

using Clock = std::chrono::steady_clock;

int TestKeys(int fallback) {
  const char* env = std::getenv("SHARDKV_TEST_KEYS");
  return env && *env ? std::atoi(env) : fallback;
}

bool LongTests() {
  const char* env = std::getenv("SHARDKV_LONG");
  return env != nullptr && std::string(env) == "1";
}

// Every wait of the in-process and process tests comes through here: under a slow build
// (TimeScale()) it waits that much longer for the same condition.
bool PollUntil(const std::function<bool()>& done, std::chrono::milliseconds limit,
               std::chrono::milliseconds every) {
  const auto deadline = Clock::now() + Scaled(limit);
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(every);
  }
}

std::unique_ptr<Admin> AdminFor(std::vector<std::string> seeds, uint64_t cluster_id,
                                std::chrono::milliseconds timeout,
                                std::chrono::milliseconds plan_timeout) {
  AdminOptions o;
  o.seeds = std::move(seeds);
  o.cluster_id = cluster_id;
  o.cluster_origin = "the cluster under test";
  o.timeout_ms = static_cast<uint32_t>(Scaled(timeout).count());
  o.plan_timeout_ms = static_cast<uint32_t>(Scaled(plan_timeout).count());
  auto admin = Admin::Create(std::move(o));
  if (!admin.ok()) throw std::invalid_argument("AdminFor: " + admin.status().ToString());
  return std::move(admin).value();
}

std::string DescribeChange(const ChangeReport& r) {
  if (!r.has_change) return "no change";
  std::string s = std::string(ChangeKindName(r.record.kind)) + " node " +
                  std::to_string(r.record.node_id) + ": " +
                  std::string(ChangeStateName(r.record.state));
  if (!r.record.error.empty()) s += " (" + r.record.error + ")";
  return s;
}

StatusOr<ChangeReport> WaitChange(Admin& admin,
                                  const std::function<bool(const ChangeReport&)>& until,
                                  std::chrono::milliseconds limit, const std::string& preferred) {
  std::string last = "no status yet";
  std::optional<ChangeReport> held;
  PollUntil(
      [&] {
        AdminReply r = admin.ChangeStatus(preferred);
        if (!r.status.ok()) {
          last = "status: " + r.status.ToString();
          return false;
        }
        last = DescribeChange(r.report);
        if (!until(r.report)) return false;
        held = std::move(r.report);
        return true;
      },
      limit, std::chrono::milliseconds(50));
  if (held) return std::move(*held);
  return Status::Timeout("the change did not get there within " + std::to_string(limit.count()) +
                         " ms; last: " + last);
}

StatusOr<ChangeReport> WaitChange(Admin& admin, ChangeState state,
                                  std::chrono::milliseconds limit) {
  auto r = WaitChange(
      admin, [&](const ChangeReport& c) { return c.record.state == state || ChangeEnded(c); },
      limit);
  if (!r.ok() || r->record.state == state) return r;
  return Status::FailedPrecondition("waiting for " + std::string(ChangeStateName(state)) +
                                    ", the change ended: " + DescribeChange(*r));
}

StatusOr<ChangeReport> WaitChangeEnded(Admin& admin, std::chrono::milliseconds limit) {
  return WaitChange(
      admin, [](const ChangeReport& r) { return r.has_change && ChangeEnded(r); }, limit);
}

std::optional<ClusterMap> NodeMap(const std::string& address, std::chrono::milliseconds timeout) {
  auto admin = AdminFor({address}, 0, timeout, timeout);
  auto map = admin->MapOf(address);
  if (!map.ok()) return std::nullopt;
  return std::move(map).value();
}

uint64_t ClusterIdOf(const std::string& address) {
  auto map = NodeMap(address);
  return map ? map->cluster_id() : 0;
}

int LocallyHeld(const std::string& address, const ClusterMap& map,
                const std::vector<std::string>& keys) {
  net::RpcClient rpc(address);
  int held = 0;
  for (const std::string& key : keys) {
    net::Request req;
    req.body = net::ReplicaReadRequest{map.TokenOf(key), key};
    auto reply = rpc.CallSync(std::move(req), std::chrono::seconds(5));
    if (!reply.ok() || !reply->ok()) continue;
    const auto* body = std::get_if<net::ReplicaReadResponse>(&reply->body);
    held += body != nullptr && body->found && !body->tombstone;
  }
  return held;
}

std::string AddressFromPortFile(const std::string& data_dir) {
  std::ifstream in(data_dir + "/port");
  int port = 0;
  if (in >> port && port > 0) return "127.0.0.1:" + std::to_string(port);
  return "";
}

std::string WaitForPortFile(const std::string& data_dir, std::chrono::milliseconds limit) {
  std::string address;
  PollUntil(
      [&] {
        address = AddressFromPortFile(data_dir);
        return !address.empty();
      },
      limit, std::chrono::milliseconds(20));
  return address;
}

std::string ClusterIdInDir(const std::string& dir) {
  std::ifstream in(dir + "/cluster.conf");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cluster_id=", 0) == 0) return line.substr(11);
  }
  return "";
}

std::vector<std::string> NodeAddressesInDir(const std::string& dir) {
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("node-", 0) != 0) continue;
    const std::string address = AddressFromPortFile(e.path().string());
    if (!address.empty()) found.emplace_back(std::atoi(name.c_str() + 5), address);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

Status FormAlone(const std::string& address, uint32_t id, uint64_t cluster_id) {
  ClusterParams params;
  params.replication_factor = params.write_quorum = params.read_quorum = 1;
  auto formed =
      AdminFor({address})->FormCluster({{id, address, 1.0, NodeState::kUp}}, params, cluster_id);
  return formed.ok() ? Status::OK() : formed.status();
}

std::unique_ptr<Admin> AdminForDir(const std::string& dir) {
  const std::string id = ClusterIdInDir(dir);
  return AdminFor(NodeAddressesInDir(dir), id.empty() ? 0 : std::stoull(id));
}

}  // namespace shardkv::testing
