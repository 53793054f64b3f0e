#include "testing/in_process_cluster.h"

#include "net/rpc_client.h"
#include "testing/cluster_util.h"
#include "testing/time_scale.h"

namespace shardkv::testing {

InProcessCluster::InProcessCluster(int nodes, ClusterParams params, uint64_t tombstone_grace_ms,
                                   uint64_t cluster_id)
    : n_(nodes),
      params_(params),
      grace_ms_(tombstone_grace_ms),
      cluster_id_(cluster_id),
      nodes_(nodes),
      addresses_(nodes) {}

InProcessCluster::~InProcessCluster() {
  for (auto& n : nodes_) {
    if (n) n->Stop();
  }
}

NodeOptions InProcessCluster::OptionsFor(uint32_t id, uint16_t port) const {
  NodeOptions o;
  o.id = id;
  o.listen = "127.0.0.1:" + std::to_string(port);
  o.data_dir = dir_.Sub("node-" + std::to_string(id));
  o.io_threads = 1;
  if (grace_ms_ != 0) o.tombstone_grace_ms = grace_ms_;
  if (tune_) tune_(id, &o);
  return o;
}

Status InProcessCluster::Start() {
  std::vector<ClusterNode> members;
  for (int i = 0; i < n_; ++i) {
    const uint32_t id = static_cast<uint32_t>(i + 1);
    auto node = Node::Start(OptionsFor(id, 0));
    if (!node.ok()) return node.status();
    nodes_[i] = std::move(node).value();
    addresses_[i] = nodes_[i]->address();
    members.push_back({id, addresses_[i], 1.0, NodeState::kUp});
  }
  auto map = AdminFor(addresses_, 0)->FormCluster(members, params_, cluster_id_);
  if (!map.ok()) return map.status();
  map_ = std::make_unique<ClusterMap>(std::move(map).value());
  return Status::OK();
}

void InProcessCluster::StopNode(uint32_t id) {
  if (nodes_[id - 1]) nodes_[id - 1]->Stop();
  nodes_[id - 1].reset();
}

Status InProcessCluster::RestartNode(uint32_t id) {
  std::string host;
  uint16_t port = 0;
  if (Status s = ParseHostPort(addresses_[id - 1], &host, &port); !s.ok()) return s;
  auto node = Node::Start(OptionsFor(id, port));
  if (!node.ok()) return node.status();
  nodes_[id - 1] = std::move(node).value();
  return Status::OK();
}

StatusOr<uint32_t> InProcessCluster::AddStandaloneNode() {
  const auto id = static_cast<uint32_t>(nodes_.size() + 1);
  auto node = Node::Start(OptionsFor(id, 0));
  if (!node.ok()) return node.status();
  addresses_.push_back((*node)->address());
  nodes_.push_back(std::move(node).value());
  return id;
}

std::vector<std::string> InProcessCluster::Addresses() const { return addresses_; }

StatusOr<std::unique_ptr<Client>> InProcessCluster::Connect(ClientOptions options) const {
  if (options.seeds.empty()) options.seeds = addresses_;
  // A slow build's nodes answer that much later; a release build keeps the test's timeout.
  options.timeout_ms = ScaledMs(options.timeout_ms);
  return Client::Connect(std::move(options));
}

StatusOr<net::Response> InProcessCluster::Call(uint32_t id, net::Request request) const {
  net::RpcClient rpc(addresses_[id - 1]);
  return rpc.CallSync(std::move(request), Scaled(std::chrono::milliseconds(10000)));
}

StatusOr<net::ReplicaReadResponse> InProcessCluster::LocalRead(uint32_t id,
                                                               const std::string& key) const {
  net::Request req;
  req.epoch = 0;  // no fencing: a test peeks at whatever the node holds
  req.body = net::ReplicaReadRequest{map_->TokenOf(key), key};
  auto reply = Call(id, std::move(req));
  if (!reply.ok()) return reply.status();
  if (!reply->ok()) return reply->status();
  const auto* body = std::get_if<net::ReplicaReadResponse>(&reply->body);
  if (body == nullptr) return Status::Corruption("unexpected reply");
  if (!body->found) return Status::NotFound(key);
  return *body;
}

std::unique_ptr<Admin> AdminFor(const InProcessCluster& c) {
  return AdminFor(c.Addresses(), c.cluster_id());
}

}  // namespace shardkv::testing
