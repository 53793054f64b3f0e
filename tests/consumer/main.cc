// Embedding shardkv: an application that runs the cluster in its own process.
//
// Starts three shardkv::Nodes, forms a cluster of them with shardkv::Admin, writes keys with
// shardkv::Client, adds a fourth node and watches the change until it is done, then checks that
// every key reads back and that the cluster has four members. Exits non-zero, saying what
// failed, on any error; the nodes are stopped and their data removed either way.
//
// tools/check.sh builds this against an installed shardkv (find_package) and runs it;
// docs/library.md quotes it.
//
//   consumer [KEYS]     (default 1000)
#include <shardkv/admin.h>
#include <shardkv/client.h>
#include <shardkv/cluster_map.h>
#include <shardkv/node.h>
#include <stdlib.h>  // mkdtemp

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Prints why the program fails; main returns its value, so the Sandbox below still cleans up.
int Fail(const std::string& what, const shardkv::Status& s = shardkv::Status::OK()) {
  std::fprintf(stderr, "consumer: FAILED: %s%s%s\n", what.c_str(), s.ok() ? "" : ": ",
               s.ok() ? "" : s.ToString().c_str());
  return 1;
}

// The nodes and the directory their data lives in. The destructor stops every node before
// removing the directory (a running node still writes to it), on success and failure alike.
class Sandbox {
 public:
  Sandbox() {
    std::string pattern = (std::filesystem::temp_directory_path() / "shardkv-consumer-XXXXXX");
    if (mkdtemp(pattern.data()) != nullptr) dir_ = pattern;
  }
  ~Sandbox() {
    for (auto& node : nodes_) node->Stop();
    nodes_.clear();
    std::error_code ignored;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ignored);
  }
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  bool ok() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }

  // A node that starts unformed (in no cluster) on a free port: Admin puts it in one.
  shardkv::StatusOr<shardkv::Node*> StartNode(uint32_t id) {
    shardkv::NodeOptions options;
    options.id = id;                 // unique in the cluster, never reused
    options.listen = "127.0.0.1:0";  // port 0: the OS picks a free port, node->address() tells
    options.data_dir = dir_ + "/node-" + std::to_string(id);
    auto node = shardkv::Node::Start(std::move(options));
    if (!node.ok()) return node.status();
    nodes_.push_back(std::move(node).value());
    return nodes_.back().get();
  }

 private:
  std::string dir_;
  std::vector<std::unique_ptr<shardkv::Node>> nodes_;
};

std::string KeyOf(int i) { return "user:" + std::to_string(i); }
std::string ValueOf(int i) { return "value-" + std::to_string(i); }

}  // namespace

int main(int argc, char** argv) {
  const int keys = argc > 1 ? std::atoi(argv[1]) : 1000;
  if (keys <= 0) return Fail("usage: consumer [KEYS > 0]");
  const auto start = Clock::now();

  Sandbox sandbox;
  if (!sandbox.ok()) return Fail("cannot create a temporary directory");

  // ---- Three nodes, formed into one cluster ----
  std::vector<shardkv::ClusterNode> members;
  std::vector<std::string> seeds;
  for (uint32_t id = 1; id <= 3; ++id) {
    auto node = sandbox.StartNode(id);
    if (!node.ok()) return Fail("start node " + std::to_string(id), node.status());
    members.push_back({id, (*node)->address(), /*weight=*/1.0, shardkv::NodeState::kUp});
    seeds.push_back((*node)->address());
  }

  shardkv::AdminOptions admin_options;
  admin_options.seeds = seeds;
  auto admin = shardkv::Admin::Create(admin_options);
  if (!admin.ok()) return Fail("create the admin", admin.status());
  // Ring placement, every key on 3 replicas; a write or read needs 2 of them (a quorum), so the
  // cluster keeps serving with one node down.
  shardkv::ClusterParams params;
  params.mode = shardkv::PlacementMode::kRing;
  params.replication_factor = 3;
  params.write_quorum = 2;
  params.read_quorum = 2;
  auto formed = (*admin)->FormCluster(members, params);  // cluster id 0: a random one
  if (!formed.ok()) return Fail("form the cluster", formed.status());
  std::printf("formed cluster %llu: 3 nodes, epoch %llu (%.2f s)\n",
              static_cast<unsigned long long>(formed->cluster_id()),
              static_cast<unsigned long long>(formed->epoch()), SecondsSince(start));

  // ---- Write ----
  // The client talks to this cluster only: a node of another cluster is refused.
  shardkv::ClientOptions client_options;
  client_options.seeds = seeds;
  client_options.cluster_id = formed->cluster_id();
  auto client = shardkv::Client::Connect(client_options);
  if (!client.ok()) return Fail("connect the client", client.status());
  auto phase = Clock::now();
  std::vector<std::pair<std::string, std::string>> batch;
  for (int i = 0; i < keys; ++i) {
    batch.emplace_back(KeyOf(i), ValueOf(i));
    if (batch.size() == 500 || i + 1 == keys) {  // MultiPut splits a batch per coordinator
      auto results = (*client)->MultiPut(batch);
      for (size_t j = 0; j < results.size(); ++j) {
        if (!results[j].ok()) return Fail("put " + batch[j].first, results[j].status());
      }
      batch.clear();
    }
  }
  std::printf("wrote %d keys (%.2f s)\n", keys, SecondsSince(phase));

  // ---- Add a fourth node ----
  auto fourth = sandbox.StartNode(4);
  if (!fourth.ok()) return Fail("start node 4", fourth.status());
  shardkv::ChangeRequest add;
  add.kind = shardkv::ChangeKind::kAdd;
  add.node_id = 4;
  add.address = (*fourth)->address();
  // Plan counts exactly what would move, on the nodes, and commits nothing.
  shardkv::AdminReply plan = (*admin)->Plan(add);
  if (!plan.status.ok()) return Fail("plan adding node 4", plan.status);
  const shardkv::ChangeRecord& planned = plan.report.record;
  std::printf("plan: %llu of %llu copies move to node 4 (%llu bytes, ideal share %.1f%%)\n",
              static_cast<unsigned long long>(planned.planned_copies),
              static_cast<unsigned long long>(planned.total_copies),
              static_cast<unsigned long long>(planned.planned_bytes),
              100.0 * planned.ideal_fraction);

  // Begin returns once the change is committed and streaming; the node that planned drives it
  // from there on its own, so the application only watches.
  phase = Clock::now();
  shardkv::AdminReply begun = (*admin)->Begin(add, shardkv::ChangeThrottle{}, plan.address);
  if (!begun.status.ok()) return Fail("begin adding node 4", begun.status);

  // ---- Watch the change until it ends ----
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  shardkv::ChangeReport report = begun.report;
  shardkv::ChangeState shown_state = report.record.state;
  uint64_t shown_copies = report.copies_done;
  shardkv::Status last_error;  // of the last status request that failed
  std::printf("change %llu: %s\n", static_cast<unsigned long long>(report.record.change_id),
              std::string(shardkv::ChangeStateName(shown_state)).c_str());
  while (!shardkv::ChangeEnded(report)) {
    if (Clock::now() > deadline) {
      return Fail("adding node 4 did not finish within 60 s; last state " +
                      std::string(shardkv::ChangeStateName(report.record.state)),
                  last_error);
    }
    // Polling is how a change is watched: the interval only bounds how late we notice.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    shardkv::AdminReply status = (*admin)->ChangeStatus(begun.address);
    if (!status.status.ok()) {  // e.g. the driver is slow to answer: ask again
      last_error = status.status;
      continue;
    }
    report = status.report;
    if (report.record.state != shown_state || report.copies_done != shown_copies) {
      shown_state = report.record.state;
      shown_copies = report.copies_done;
      std::printf("  %-9s copies %llu/%llu (%.2f s)\n",
                  std::string(shardkv::ChangeStateName(shown_state)).c_str(),
                  static_cast<unsigned long long>(report.copies_done),
                  static_cast<unsigned long long>(report.record.planned_copies),
                  SecondsSince(phase));
    }
  }
  if (report.record.state != shardkv::ChangeState::kDone) {
    return Fail("adding node 4 ended " +
                std::string(shardkv::ChangeStateName(report.record.state)) + ": " +
                report.record.error);
  }
  // Moved can exceed planned (writes during the change are streamed too), never fall short.
  if (report.record.moved_copies < report.record.planned_copies) {
    return Fail("the change moved " + std::to_string(report.record.moved_copies) + " copies of " +
                std::to_string(report.record.planned_copies) + " planned");
  }
  std::printf("added node 4: moved %llu copies (%.2f s)\n",
              static_cast<unsigned long long>(report.record.moved_copies), SecondsSince(phase));

  // ---- Verify ----
  // The client still holds the 3-node map: the first node that answers with a newer one switches
  // it over, without the application doing anything.
  phase = Clock::now();
  for (int first = 0; first < keys; first += 500) {
    std::vector<std::string> names;
    for (int i = first; i < keys && i < first + 500; ++i) names.push_back(KeyOf(i));
    auto values = (*client)->MultiGet(names);
    for (size_t j = 0; j < values.size(); ++j) {
      const int i = first + static_cast<int>(j);
      if (!values[j].ok()) return Fail("get " + names[j], values[j].status());
      if (*values[j] != ValueOf(i)) return Fail(names[j] + " reads back '" + *values[j] + "'");
    }
  }
  auto map = (*admin)->NewestMap();
  if (!map.ok()) return Fail("read the cluster map", map.status());
  if (map->nodes().size() != 4 || map->has_pending()) {
    return Fail("the map should have 4 members and no change pending: " + map->DebugString());
  }
  for (const shardkv::ClusterNode& n : map->nodes()) {
    if (n.state != shardkv::NodeState::kUp) return Fail("not up: " + map->DebugString());
  }
  std::printf("verified %d keys on 4 nodes, epoch %llu, client at epoch %llu (%.2f s)\n", keys,
              static_cast<unsigned long long>(map->epoch()),
              static_cast<unsigned long long>((*client)->map()->epoch()), SecondsSince(phase));
  std::printf("consumer: ok in %.2f s\n", SecondsSince(start));
  return 0;
}
