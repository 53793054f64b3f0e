#include "admin/repair_driver.h"

#include <algorithm>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace shardkv::admin {
namespace {

// A slice compares whole ranges, each up to a few tree rounds and leaf batches of 30 s at most.
constexpr auto kSliceMargin = std::chrono::seconds(120);

// One comparing node's share of the repair: its slices until it is done or fails. Its own
// summary and counts; the caller merges them.
struct NodeRun {
  const ClusterNode* node = nullptr;
  RepairSummary summary;
  bool answered = false;
  std::string unreachable;
};

// Adds `from` (one node's share, or one slice's report) to `into`.
void MergeInto(RepairSummary* into, RepairSummary from) {
  into->ranges_compared += from.ranges_compared;
  into->ranges_differed += from.ranges_differed;
  into->ranges_skipped += from.ranges_skipped;
  into->ranges_failed += from.ranges_failed;
  into->leaves_differed += from.leaves_differed;
  into->keys_fetched += from.keys_fetched;
  into->bytes_fetched += from.bytes_fetched;
  into->tree_bytes += from.tree_bytes;
  for (const RepairStreamed& n : from.streamed) {
    auto it = std::find_if(into->streamed.begin(), into->streamed.end(),
                           [&](const RepairStreamed& x) { return x.node_id == n.node_id; });
    if (it == into->streamed.end()) {
      into->streamed.push_back({n.node_id, 0, 0});
      it = into->streamed.end() - 1;
    }
    it->keys += n.keys;
    it->bytes += n.bytes;
    into->keys_streamed += n.keys;
    into->bytes_streamed += n.bytes;
  }
  for (std::string& f : from.failures) into->failures.push_back(std::move(f));
  into->failed_nodes.insert(into->failed_nodes.end(), from.failed_nodes.begin(),
                            from.failed_nodes.end());
}

// One slice's report as a summary (its streamed counts per node; the totals come from those).
RepairSummary SummaryOf(const net::RepairReport& r) {
  RepairSummary s;
  s.ranges_compared = r.ranges_compared;
  s.ranges_differed = r.ranges_differed;
  s.ranges_skipped = r.ranges_skipped;
  s.ranges_failed = r.ranges_failed;
  s.leaves_differed = r.leaves_differed;
  s.keys_fetched = r.keys_fetched;
  s.bytes_fetched = r.bytes_fetched;
  s.tree_bytes = r.tree_bytes;
  for (const net::NodeStreamed& n : r.streamed) s.streamed.push_back({n.node_id, n.keys, n.bytes});
  s.failures = r.failures;
  return s;
}

}  // namespace

StatusOr<RepairSummary> RunRepair(AdminTransport* transport, const ClusterMap& map,
                                  const RepairOptions& options, const RepairProgressFn& progress,
                                  std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  if (!options.tokens.Valid()) return Status::InvalidArgument("token range has first > last");
  std::vector<NodeRun> runs;
  if (options.node_id != 0) {
    const ClusterNode* n = map.FindNode(options.node_id);
    if (n == nullptr) {
      return Status::InvalidArgument("node " + std::to_string(options.node_id) +
                                     " is not a member of the cluster");
    }
    runs.push_back(NodeRun{n, {}, false, {}});
  } else {
    for (const ClusterNode& n : map.nodes()) runs.push_back(NodeRun{&n, {}, false, {}});
    std::sort(runs.begin(), runs.end(),
              [](const NodeRun& a, const NodeRun& b) { return a.node->id < b.node->id; });
  }
  const auto wait = std::max<std::chrono::milliseconds>(
      timeout, std::chrono::milliseconds(options.slice_ms) + kSliceMargin);
  // The transport only reads its cluster id once one is set, so the nodes can be asked at once:
  // set it from the map (a no-op when the admin already knows it).
  transport->Adopt(map.cluster_id(), "the cluster map");
  common::Mutex mu;
  RepairProgress p;
  p.nodes_total = static_cast<uint32_t>(runs.size());
  auto drive = [&](NodeRun& run) {
    const ClusterNode* node = run.node;
    net::RepairCommand command;
    command.all = options.node_id != 0;
    command.from = options.tokens.first;
    command.first = options.tokens.first;
    command.last = options.tokens.last;
    command.budget_ms = options.slice_ms;
    bool first_slice = true;
    for (;;) {
      CallFailure failure;
      auto body = transport->Call(node->address, net::AntiEntropyRequest{command}, wait, &failure);
      const net::RepairReport* report = nullptr;
      if (body.ok()) {
        const auto* ae = std::get_if<net::AntiEntropyResponse>(&*body);
        report = ae != nullptr ? std::get_if<net::RepairReport>(&ae->reply) : nullptr;
        if (report == nullptr) body = Status::Corruption("unexpected reply to a repair command");
      }
      if (!body.ok()) {
        if (!failure.unreachable && !failure.foreign) run.answered = true;
        const std::string why = "node " + std::to_string(node->id) + " (" + node->address +
                                "): " + body.status().ToString();
        run.summary.failures.push_back(why);
        run.summary.failed_nodes.push_back(node->id);
        if (failure.unreachable || failure.foreign) run.unreachable = why;
        break;
      }
      run.answered = true;
      MergeInto(&run.summary, SummaryOf(*report));
      common::MutexLock lock(&mu);
      p.node_id = node->id;
      if (first_slice) p.ranges_total += report->ranges_total;
      first_slice = false;
      p.ranges_done += report->ranges_compared + report->ranges_skipped;
      for (const net::NodeStreamed& n : report->streamed) p.keys_streamed += n.keys;
      if (report->done) break;
      if (progress) progress(p);
      command.from = report->next;
    }
    common::MutexLock lock(&mu);
    ++p.nodes_done;
    if (progress) progress(p);
  };
  // Every comparing node at once: each compares its own ranges (those it is the first replica
  // of), so their work overlaps instead of each node's scans waiting for the previous node's.
  std::vector<std::thread> threads;
  threads.reserve(runs.size());
  for (NodeRun& run : runs) threads.emplace_back(drive, std::ref(run));
  for (std::thread& t : threads) t.join();

  RepairSummary summary;
  bool answered = false;
  std::string unreachable;
  for (NodeRun& run : runs) {
    answered = answered || run.answered;
    if (!run.unreachable.empty())
      unreachable += (unreachable.empty() ? "" : "; ") + run.unreachable;
    MergeInto(&summary, std::move(run.summary));
  }
  if (!answered) {
    return Status::Unavailable(transport->NoNode() + " answered the repair (" + unreachable + ")");
  }
  std::sort(summary.streamed.begin(), summary.streamed.end(),
            [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
  summary.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace shardkv::admin
