#include "plan_printer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "json_writer.h"
#include "rebalance_client.h"

namespace shardkv::cli {

namespace {

// JSON has no NaN or infinity.
double Finite(double v) { return std::isfinite(v) ? v : 0.0; }

double Fraction(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

std::string Pct(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.1f%%", fraction * 100);
  return buf;
}

// "12,345": the numbers in plans get large.
std::string Grouped(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

void PrintMatrix(std::FILE* out, const ChangeReport& plan) {
  std::set<uint32_t> sources, destinations;
  std::map<std::pair<uint32_t, uint32_t>, const StreamProgress*> cells;
  for (const StreamProgress& s : plan.streams) {
    sources.insert(s.source);
    destinations.insert(s.destination);
    cells[{s.source, s.destination}] = &s;
  }
  if (plan.streams.empty()) {
    std::fprintf(out, "streams: none (nothing moves)\n");
    return;
  }
  std::fprintf(out, "streams, source -> destination (each cell: copies / ranges / bytes):\n");
  // Column width: the widest cell.
  auto cell = [&](uint32_t s, uint32_t d) -> std::string {
    auto it = cells.find({s, d});
    if (it == cells.end()) return "-";
    return Grouped(it->second->copies_planned) + " / " + std::to_string(it->second->ranges_total) +
           " / " + HumanBytes(static_cast<double>(it->second->bytes_planned));
  };
  size_t width = 8;
  for (uint32_t s : sources) {
    for (uint32_t d : destinations) width = std::max(width, cell(s, d).size());
  }
  const int w = static_cast<int>(width);
  std::fprintf(out, "  %-8s", "from\\to");
  for (uint32_t d : destinations) {
    std::fprintf(out, "  %*s", w, ("node " + std::to_string(d)).c_str());
  }
  std::fprintf(out, "\n");
  for (uint32_t s : sources) {
    std::fprintf(out, "  %-8s", ("node " + std::to_string(s)).c_str());
    for (uint32_t d : destinations) std::fprintf(out, "  %*s", w, cell(s, d).c_str());
    std::fprintf(out, "\n");
  }
}

// The address of the node that computed the plan (the leader, when the node asked forwarded the
// request), from the plan's own node list; else the node asked.
std::string PlannerAddress(const ChangeReport& plan, const PlanContext& ctx) {
  for (const NodeShare& s : plan.shares) {
    if (s.id == plan.driver && !s.address.empty()) return s.address;
  }
  return ctx.asked;
}

}  // namespace

void PrintPlanTable(std::FILE* out, const ChangeReport& plan, const PlanContext& ctx) {
  const ChangeRecord& r = plan.record;
  std::string what = DescribeChange(r);
  if (r.kind == ChangeKind::kAdd) {
    char weight[32];
    std::snprintf(weight, sizeof(weight), "%g", ctx.weight);
    what += " (" + ctx.address + ", weight " + weight + ")";
  }
  std::fprintf(out, "plan: %s, from epoch %llu, computed by node %u (%s)\n\n", what.c_str(),
               static_cast<unsigned long long>(plan.epoch), plan.driver,
               PlannerAddress(plan, ctx).c_str());
  std::fprintf(out, "%4s  %-21s  %-8s  %12s  %12s\n", "ID", "ADDRESS", "STATE", "SHARE BEFORE",
               "SHARE AFTER");
  for (const NodeShare& s : plan.shares) {
    std::fprintf(out, "%4u  %-21s  %-8s  %12s  %12s\n", s.id, s.address.c_str(), s.state.c_str(),
                 Pct(s.share_before).c_str(), Pct(s.share_after).c_str());
  }
  std::fprintf(out, "\n");
  PrintMatrix(out, plan);
  std::fprintf(out, "\n");
  std::fprintf(out, "moved:    %s of %s copies = %s (ideal %s), %s, %s stream tasks\n",
               Grouped(r.planned_copies).c_str(), Grouped(r.total_copies).c_str(),
               r.total_copies ? Pct(Fraction(r.planned_copies, r.total_copies)).c_str() : "n/a",
               Pct(r.ideal_fraction).c_str(),
               HumanBytes(static_cast<double>(r.planned_bytes)).c_str(),
               Grouped(r.planned_ranges).c_str());
  std::fprintf(out, "remapped: %s of %s live keys change replica set (%s)\n",
               Grouped(r.remapped_keys).c_str(), Grouped(r.live_keys).c_str(),
               r.live_keys ? Pct(Fraction(r.remapped_keys, r.live_keys)).c_str() : "n/a");
  if (r.planned_tombstones != 0) {
    std::fprintf(out, "          plus %s tombstones\n", Grouped(r.planned_tombstones).c_str());
  }
  if (r.replicas_before != 0 &&
      (r.replicas_before != r.replicas_after || r.write_quorum_before != r.write_quorum_after ||
       r.read_quorum_before != r.read_quorum_after)) {
    std::fprintf(out, "replicas: R=%u W=%u Q=%u -> R=%u W=%u Q=%u (effective)\n", r.replicas_before,
                 r.write_quorum_before, r.read_quorum_before, r.replicas_after,
                 r.write_quorum_after, r.read_quorum_after);
  }
  std::fprintf(out, "rate:     %s/s, %u streams per node\n",
               HumanBytes(static_cast<double>(r.rate_bytes_per_s)).c_str(), r.streams_per_node);
}

std::string PlanJson(const ChangeReport& plan, const PlanContext& ctx, const ChangeReport* begun) {
  const ChangeRecord& r = plan.record;
  const bool add = r.kind == ChangeKind::kAdd;
  JsonWriter w;
  w.Begin().Field("kind", ChangeKindName(r.kind)).Field("node_id", r.node_id);
  w.Key("address");
  add ? w.Value(ctx.address) : w.Raw("null");
  w.Key("weight");
  add ? w.Value(Finite(ctx.weight)) : w.Raw("null");
  w.Field("epoch", plan.epoch)
      .Field("planned_by", plan.driver)
      .Field("planned_by_address", PlannerAddress(plan, ctx))
      .Field("live_keys", r.live_keys)
      .Field("total_copies", r.total_copies)
      .Field("planned_copies", r.planned_copies)
      .Field("planned_tombstones", r.planned_tombstones)
      .Field("planned_bytes", r.planned_bytes)
      .Field("planned_ranges", r.planned_ranges)
      .Field("moved_fraction", Fraction(r.planned_copies, r.total_copies))
      .Field("ideal_fraction", Finite(r.ideal_fraction))
      .Field("remapped_keys", r.remapped_keys)
      .Field("rate_bytes_per_s", r.rate_bytes_per_s)
      .Field("streams_per_node", r.streams_per_node)
      .Field("replicas_before", r.replicas_before)
      .Field("write_quorum_before", r.write_quorum_before)
      .Field("read_quorum_before", r.read_quorum_before)
      .Field("replicas_after", r.replicas_after)
      .Field("write_quorum_after", r.write_quorum_after)
      .Field("read_quorum_after", r.read_quorum_after);
  w.Key("nodes").BeginArray();
  for (const NodeShare& s : plan.shares) {
    w.Begin()
        .Field("id", s.id)
        .Field("address", s.address)
        .Field("state", s.state)
        .Field("share_before_pct", Finite(s.share_before * 100))
        .Field("share_after_pct", Finite(s.share_after * 100))
        .End();
  }
  w.EndArray();
  w.Key("streams").BeginArray();
  for (const StreamProgress& s : plan.streams) {
    w.Begin()
        .Field("source", s.source)
        .Field("destination", s.destination)
        .Field("ranges", s.ranges_total)
        .Field("copies", s.copies_planned)
        .Field("bytes", s.bytes_planned)
        .End();
  }
  w.EndArray();
  w.Field("started", begun != nullptr);
  w.Key("change_id");
  begun ? w.Value(std::to_string(begun->record.change_id)) : w.Raw("null");
  w.Field("state", begun ? StateName(*begun) : std::string("planned"));
  w.End();
  return w.str();
}

std::string StatusJson(const ChangeReport& rep, int64_t client_errors,
                       const std::vector<BehindMember>& behind) {
  JsonWriter w;
  w.Begin().Field("state", StateName(rep));
  if (!rep.has_change) {
    for (const char* k :
         {"change_id", "kind", "node_id", "planned_copies", "moved_copies", "total_copies",
          "remapped_keys", "ideal_fraction", "moved_fraction", "client_errors", "planned_bytes",
          "moved_bytes", "rate_bytes_per_s", "streams_per_node", "resumed_tasks", "started_ms",
          "finished_ms", "elapsed_s"}) {
      w.Key(k).Raw("null");
    }
    w.Field("epoch", rep.epoch).Field("driver", rep.driver);
    w.Field("driver_address", rep.driver_address).Field("live", rep.from_driver);
    w.Field("error", "").Key("streams").BeginArray().EndArray();
    w.Key("members_behind").BeginArray().EndArray();
    w.End();
    return w.str();
  }
  const ChangeRecord& r = rep.record;
  w.Field("change_id", std::to_string(r.change_id))
      .Field("kind", ChangeKindName(r.kind))
      .Field("node_id", r.node_id)
      .Field("planned_copies", r.planned_copies)
      .Field("moved_copies", rep.copies_done)
      .Field("total_copies", r.total_copies)
      .Field("remapped_keys", r.remapped_keys)
      .Field("ideal_fraction", Finite(r.ideal_fraction))
      .Field("moved_fraction", Fraction(rep.copies_done, r.total_copies))
      .Field("client_errors", client_errors)
      .Field("planned_bytes", r.planned_bytes)
      .Field("moved_bytes", rep.bytes_done)
      .Field("rate_bytes_per_s", r.rate_bytes_per_s)
      .Field("streams_per_node", r.streams_per_node)
      .Field("resumed_tasks", r.resumed_tasks)
      .Field("started_ms", r.started_ms)
      .Field("finished_ms", r.finished_ms)
      .Field("elapsed_s", Finite(rep.elapsed_s))
      .Field("epoch", rep.epoch)
      .Field("driver", rep.driver)
      .Field("driver_address", rep.driver_address)
      .Field("live", rep.from_driver)
      .Field("error", r.error);
  w.Key("streams").BeginArray();
  for (const StreamProgress& s : rep.streams) {
    w.Begin()
        .Field("source", s.source)
        .Field("destination", s.destination)
        .Field("ranges_total", s.ranges_total)
        .Field("ranges_done", s.ranges_done)
        .Field("copies_planned", s.copies_planned)
        .Field("copies_done", s.copies_done)
        .Field("bytes_planned", s.bytes_planned)
        .Field("bytes_done", s.bytes_done)
        .End();
  }
  w.EndArray().Key("members_behind").BeginArray();
  for (const BehindMember& b : behind) {
    w.Begin().Field("id", b.id).Key("epoch");
    b.epoch ? w.Value(*b.epoch) : w.Raw("null");
    w.End();
  }
  w.EndArray().End();
  return w.str();
}

}  // namespace shardkv::cli
