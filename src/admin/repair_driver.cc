#include "admin/repair_driver.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "shardkv/stats.h"

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

// What a node's stats say about needing repair (design.md "Needs repair").
struct NeedsRepairView {
  bool answered = false;
  bool own = false;                    // counter needs_repair
  uint64_t rebuilt_at_ms = 0;          // its last rebuild or repair
  std::map<uint32_t, uint64_t> marks;  // info repair_marks: "3:1733150000000,5:..."
};

NeedsRepairView ViewOf(AdminTransport* transport, const ClusterNode& node,
                       std::chrono::milliseconds timeout) {
  NeedsRepairView v;
  CallFailure failure;
  auto body = transport->Call(node.address, net::StatsRequest{}, timeout, &failure);
  const auto* stats = body.ok() ? std::get_if<net::StatsResponse>(&*body) : nullptr;
  if (stats == nullptr) return v;
  v.answered = true;
  auto counter = [&](std::string_view name) -> int64_t {
    auto it = stats->counters.find(std::string(name));
    return it == stats->counters.end() ? 0 : it->second;
  };
  v.own = counter(stats::needs_repair) == 1;
  v.rebuilt_at_ms = static_cast<uint64_t>(std::max<int64_t>(0, counter(stats::rebuilt_at_ms)));
  if (auto it = stats->info.find(std::string(stats::repair_marks)); it != stats->info.end()) {
    const std::string& text = it->second;
    size_t at = 0;
    while (at < text.size()) {
      size_t comma = text.find(',', at);
      if (comma == std::string::npos) comma = text.size();
      const std::string item = text.substr(at, comma - at);
      char* end = nullptr;
      const unsigned long long id = std::strtoull(item.c_str(), &end, 10);
      if (end != nullptr && *end == ':' && id > 0 && id <= UINT32_MAX) {
        v.marks[static_cast<uint32_t>(id)] = std::strtoull(end + 1, nullptr, 10);
      }
      at = comma + 1;
    }
  }
  return v;
}

// The members that need repair: by their own word, or by a mark of another member that their
// last rebuild or repair does not retire (a node may not have learned its mark yet).
std::set<uint32_t> NeedingRepair(AdminTransport* transport, const ClusterMap& map,
                                 std::chrono::milliseconds timeout) {
  std::map<uint32_t, NeedsRepairView> views;
  for (const ClusterNode& n : map.nodes()) views[n.id] = ViewOf(transport, n, timeout);
  std::set<uint32_t> out;
  for (const auto& [id, v] : views) {
    if (v.own) out.insert(id);
    for (const auto& [target, mark_ms] : v.marks) {
      auto t = views.find(target);
      if (t != views.end() && mark_ms > t->second.rebuilt_at_ms) out.insert(target);
    }
  }
  return out;
}

}  // namespace

StatusOr<RepairSummary> RunRepair(AdminTransport* transport, const ClusterMap& map,
                                  const RepairOptions& options, const RepairProgressFn& progress,
                                  std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  if (!options.tokens.Valid()) return Status::InvalidArgument("token range has first > last");
  std::vector<NodeRun> runs;
  // A node that needs repair compares every range it holds (its catch-up, design.md "Needs
  // repair"), and does so before the others compare theirs: they leave it out while its mark
  // holds, and see it cleared when their commands start (each polls the marks first).
  std::set<uint32_t> catching_up;
  if (options.node_id == 0 && map.EffectiveReplicas() > 1) {
    catching_up = NeedingRepair(transport, map, timeout);
  }
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
    command.all = options.node_id != 0 || catching_up.count(node->id) != 0;
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
  // Every comparing node of a phase at once: each compares its own ranges (those it is the first
  // replica of), so their work overlaps instead of each node's scans waiting for the previous
  // node's. The nodes that need repair first, then the others.
  for (const bool first_phase : {true, false}) {
    std::vector<std::thread> threads;
    threads.reserve(runs.size());
    for (NodeRun& run : runs) {
      if ((catching_up.count(run.node->id) != 0) == first_phase) {
        threads.emplace_back(drive, std::ref(run));
      }
    }
    for (std::thread& t : threads) t.join();
  }

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
  // Which of the nodes that needed repair (or the one asked for) are back, as they now say.
  if (options.node_id != 0) catching_up.insert(options.node_id);
  for (uint32_t id : catching_up) {
    const ClusterNode* node = map.FindNode(id);
    if (node == nullptr) continue;
    const NeedsRepairView v = ViewOf(transport, *node, timeout);
    if (v.answered && v.own) summary.still_need_repair.push_back(id);
  }
  summary.duration_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace shardkv::admin
