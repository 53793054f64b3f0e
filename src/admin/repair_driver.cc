#include "admin/repair_driver.h"

#include <algorithm>
#include <string>
#include <vector>

namespace shardkv::admin {
namespace {

// A slice compares whole ranges, each up to a few tree rounds and leaf batches of 30 s at most.
constexpr auto kSliceMargin = std::chrono::seconds(120);

void Add(RepairSummary* s, const net::RepairReport& r) {
  s->ranges_compared += r.ranges_compared;
  s->ranges_differed += r.ranges_differed;
  s->ranges_skipped += r.ranges_skipped;
  s->ranges_failed += r.ranges_failed;
  s->leaves_differed += r.leaves_differed;
  s->keys_fetched += r.keys_fetched;
  s->bytes_fetched += r.bytes_fetched;
  s->tree_bytes += r.tree_bytes;
  for (const net::NodeStreamed& n : r.streamed) {
    auto it = std::find_if(s->streamed.begin(), s->streamed.end(),
                           [&](const RepairStreamed& x) { return x.node_id == n.node_id; });
    if (it == s->streamed.end()) {
      s->streamed.push_back({n.node_id, 0, 0});
      it = s->streamed.end() - 1;
    }
    it->keys += n.keys;
    it->bytes += n.bytes;
    s->keys_streamed += n.keys;
    s->bytes_streamed += n.bytes;
  }
  for (const std::string& f : r.failures) s->failures.push_back(f);
}

}  // namespace

StatusOr<RepairSummary> RunRepair(AdminTransport* transport, const ClusterMap& map,
                                  const RepairOptions& options, const RepairProgressFn& progress,
                                  std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  if (!options.tokens.Valid()) return Status::InvalidArgument("token range has first > last");
  std::vector<const ClusterNode*> nodes;
  if (options.node_id != 0) {
    const ClusterNode* n = map.FindNode(options.node_id);
    if (n == nullptr) {
      return Status::InvalidArgument("node " + std::to_string(options.node_id) +
                                     " is not a member of the cluster");
    }
    nodes.push_back(n);
  } else {
    for (const ClusterNode& n : map.nodes()) nodes.push_back(&n);
    std::sort(nodes.begin(), nodes.end(),
              [](const ClusterNode* a, const ClusterNode* b) { return a->id < b->id; });
  }
  const auto wait = std::max<std::chrono::milliseconds>(
      timeout, std::chrono::milliseconds(options.slice_ms) + kSliceMargin);
  RepairSummary summary;
  RepairProgress p;
  p.nodes_total = static_cast<uint32_t>(nodes.size());
  bool answered = false;
  std::string unreachable;
  for (const ClusterNode* node : nodes) {
    p.node_id = node->id;
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
        if (!failure.unreachable && !failure.foreign) answered = true;
        const std::string why = "node " + std::to_string(node->id) + " (" + node->address +
                                "): " + body.status().ToString();
        summary.failures.push_back(why);
        summary.failed_nodes.push_back(node->id);
        if (failure.unreachable || failure.foreign) {
          unreachable += (unreachable.empty() ? "" : "; ") + why;
        }
        break;
      }
      answered = true;
      Add(&summary, *report);
      if (first_slice) p.ranges_total += report->ranges_total;
      first_slice = false;
      p.ranges_done += report->ranges_compared + report->ranges_skipped;
      p.keys_streamed = summary.keys_streamed;
      if (report->done) break;
      if (progress) progress(p);
      command.from = report->next;
    }
    ++p.nodes_done;
    if (progress) progress(p);
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
