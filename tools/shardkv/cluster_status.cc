#include "cluster_status.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_common.h"
#include "consensus_status.h"
#include "json_writer.h"
#include "orphan_nodes.h"
#include "rebalance_client.h"
#include "rebuild_check.h"
#include "repair_status.h"
#include "shardkv/cluster_map.h"
#include "shardkv/copy_shares.h"
#include "shardkv/stats.h"
#include "status_advice.h"
#include "status_probe.h"

namespace shardkv::cli {
namespace {

struct NodeRow {
  uint32_t id = 0;
  std::string address;
  bool up = false;
  std::string state = "down";  // up, down, mismatch, disk-full, disk-error, not-member, ...
  std::string problem;
  std::optional<uint64_t> node_cluster_id;
  bool disk_full = false;
  std::optional<double> primary_pct;
  std::optional<std::string> map_state;
  std::optional<pid_t> pid;
  bool alive = false;
  std::optional<int64_t> keys;
  bool keys_estimate = true;  // keys is RocksDB's estimate, or a count still running
  std::optional<double> share_pct;
  // As the node itself reports (null while it does not answer).
  std::optional<std::string> advertised;  // stats info `address`
  std::optional<std::string> redis;       // stats info `redis_address`
  std::optional<std::string> metrics;     // stats info `metrics_address`
  std::optional<std::string> node_state;  // unformed, or its own state in the map it holds
  std::optional<uint64_t> epoch;
  std::optional<std::string> map_digest;
  std::optional<int64_t> clock_offset_ms, clock_offset_error_ms;
  std::optional<std::string> version;
  std::optional<int64_t> uptime_s;
  // Needs repair (design.md "Needs repair"): by its own report, or by a mark another answering
  // node holds and the node has not been rebuilt since.
  bool needs_repair = false;
  std::string needs_repair_reason;
  bool clock_skew = false;  // the node finds its clock off a majority's: it forwards its requests
  BackgroundRepair repair;  // background anti-entropy, as it reports it
};

// "~850", "~72k", "~12.3k", "~1.2M": a KEYS figure that is an estimate says so.
std::string ApproxCount(int64_t n) {
  char buf[32];
  if (n < 1000) {
    std::snprintf(buf, sizeof(buf), "~%lld", static_cast<long long>(n));
  } else if (n < 100000) {
    std::snprintf(buf, sizeof(buf), "~%.1fk", static_cast<double>(n) / 1e3);
  } else if (n < 1000000) {
    std::snprintf(buf, sizeof(buf), "~%.0fk", static_cast<double>(n) / 1e3);
  } else {
    std::snprintf(buf, sizeof(buf), "~%.1fM", static_cast<double>(n) / 1e6);
  }
  return buf;
}

using Rebalance = std::optional<ChangeReport>;

// Needs repair: what a node says of itself, and the marks the other answering nodes of this
// cluster hold of it (a node marked while it was away is shown before it learned it, or down).
void MarkNeedsRepair(const std::map<std::string, Probe>& probes, const ClusterMap& map,
                     uint64_t expected, std::vector<NodeRow>* rows) {
  std::map<uint32_t, RepairReport> reports;  // by the reporting node's id
  for (const auto& [address, p] : probes) {
    if (p.up && p.map && p.map->cluster_id() == expected && p.node_id && *p.node_id > 0) {
      reports[static_cast<uint32_t>(*p.node_id)] = p.repair;
    }
  }
  for (NodeRow& r : *rows) {
    auto it = probes.find(r.address);
    const RepairReport* own = r.up && it != probes.end() ? &it->second.repair : nullptr;
    const RepairVerdict v = JudgeRepair(r.id, own, reports);
    r.needs_repair = v.needs_repair;
    r.needs_repair_reason = v.reason;
  }
  // The advice is the rebuild only when it can run: another replica of each range answers.
  std::set<uint32_t> serving;
  for (const NodeRow& r : *rows) {
    if (r.up && !r.needs_repair) serving.insert(r.id);
  }
  for (NodeRow& r : *rows) {
    if (!r.needs_repair) continue;
    const std::string fix =
        r.needs_repair_reason + "; " +
        RepairAdvice(r.id, r.up, RebuildAdvice(map, r.id, r.up || r.alive, serving));
    if (r.state == "up") {
      r.state = "needs-repair";
      r.problem = fix;
    } else {
      r.problem = (r.problem.empty() ? "" : r.problem + "; ") + "needs repair: " + fix;
    }
  }
}

// The fields a node reports about itself. The clock offset is against `answering` (the node
// whose map is shown), from two NTP-style measurements: its error is the sum of both bounds.
void FillReported(const Probe& p, uint32_t id, const Probe* answering, NodeRow* r) {
  r->advertised = p.advertised;
  r->redis = p.redis;
  r->metrics = p.metrics;
  r->version = p.version;
  r->uptime_s = p.uptime_s;
  r->repair = p.repair_schedule;
  if (p.map) {
    r->epoch = p.map->epoch();
    r->map_digest = Digest(*p.map);
  }
  if (p.unformed) {
    r->node_state = "unformed";
  } else if (p.map) {
    const ClusterNode* self = p.map->FindNode(id);
    r->node_state = self != nullptr ? std::string(NodeStateName(self->state)) : "not-in-map";
  }
  if (answering != nullptr && answering->clock_offset_ms && p.clock_offset_ms) {
    r->clock_offset_ms = *p.clock_offset_ms - *answering->clock_offset_ms;
    // Each measurement is within half its round trip, plus 1 ms for the clocks' resolution.
    r->clock_offset_error_ms = (p.round_trip_ms + answering->round_trip_ms + 1) / 2 + 1;
  }
}

// The rebalancer's view of the last change (nullopt if no node answered).
Rebalance QueryRebalance(const GlobalOptions& g, const std::string& dir,
                         std::chrono::milliseconds timeout) {
  AdminReply reply = AdminFor(g, dir)->ChangeStatus("", CallTo(AdminAddresses(g, dir), timeout));
  if (!reply.status.ok()) return std::nullopt;
  return reply.report;
}

void PrintRebalanceJson(JsonWriter& w, const Rebalance& r) {
  w.Key("rebalance");
  if (!r || !r->has_change) {
    w.Raw("null");
    return;
  }
  w.Begin()
      .Field("change_id", std::to_string(r->record.change_id))
      .Field("kind", ChangeKindName(r->record.kind))
      .Field("node_id", r->record.node_id)
      .Field("state", StateName(*r))
      .Field("moved_copies", MovedCopies(*r))
      .Field("planned_copies", r->record.planned_copies)
      .Field("live", r->from_driver)
      .Field("error", r->record.error)
      .End();
}

std::string RebalanceLine(const Rebalance& r) {
  if (!r) return "unknown (no node answered the rebalancer)";
  if (!r->has_change) return "none";
  std::string line = std::string(ChangeEnded(*r) ? "last change " : "change ") +
                     std::to_string(r->record.change_id) + " (" + DescribeChange(r->record) +
                     "): " + StateName(*r) + ", " + std::to_string(MovedCopies(*r)) + "/" +
                     std::to_string(r->record.planned_copies) + " copies moved";
  if (!r->from_driver && !ChangeEnded(*r)) line += " (driver unreachable: no live progress)";
  if (!r->record.error.empty()) line += "; error: " + r->record.error;
  return line;
}

void PrintJson(const std::optional<ClusterMap>& map, const std::string& map_from, uint64_t expected,
               const std::vector<NodeRow>& rows, const Rebalance& rebalance,
               const ConsensusView& consensus, std::string_view outcome) {
  JsonWriter w;
  w.Begin();
  if (!outcome.empty()) w.Field("outcome", outcome);  // `cluster init` (a mutation) only
  auto null_or = [&](const char* key, auto value, bool known) {
    w.Key(key);
    if (known) {
      w.Value(value);
    } else {
      w.Raw("null");
    }
  };
  null_or("cluster_id", map ? std::to_string(map->cluster_id()) : std::string(), map.has_value());
  null_or("expected_cluster_id", std::to_string(expected), expected != 0);
  null_or("epoch", map ? map->epoch() : 0, map.has_value());
  null_or("mode", map ? std::string(PlacementModeName(map->params().mode)) : std::string(),
          map.has_value());
  null_or("replicas", map ? map->EffectiveReplicas() : 0, map.has_value());
  null_or("write_quorum", map ? map->EffectiveWriteQuorum() : 0, map.has_value());
  null_or("read_quorum", map ? map->EffectiveReadQuorum() : 0, map.has_value());
  null_or("map_from", map_from, map.has_value());
  w.Key("nodes").BeginArray();
  for (const NodeRow& r : rows) {
    w.Begin().Field("id", r.id).Field("address", r.address).Field("state", r.state);
    w.Field("problem", r.problem);
    null_or("node_cluster_id", std::to_string(r.node_cluster_id.value_or(0)),
            r.node_cluster_id.has_value());
    null_or("map_state", r.map_state.value_or(""), r.map_state.has_value());
    null_or("pid", static_cast<int64_t>(r.pid.value_or(0)), r.pid.has_value());
    w.Field("alive", r.alive);
    null_or("keys", r.keys.value_or(0), r.keys.has_value());
    w.Field("keys_estimate", r.keys_estimate);
    w.Field("disk_full", r.disk_full);
    null_or("share_pct", r.share_pct.value_or(0), r.share_pct.has_value());
    null_or("primary_share_pct", r.primary_pct.value_or(0), r.primary_pct.has_value());
    null_or("advertised_address", r.advertised.value_or(""), r.advertised.has_value());
    null_or("redis_address", r.redis.value_or(""), r.redis.has_value());
    null_or("metrics_address", r.metrics.value_or(""), r.metrics.has_value());
    null_or("node_state", r.node_state.value_or(""), r.node_state.has_value());
    null_or("epoch", r.epoch.value_or(0), r.epoch.has_value());
    null_or("map_digest", r.map_digest.value_or(""), r.map_digest.has_value());
    null_or("clock_offset_ms", r.clock_offset_ms.value_or(0), r.clock_offset_ms.has_value());
    null_or("clock_offset_error_ms", r.clock_offset_error_ms.value_or(0),
            r.clock_offset_error_ms.has_value());
    null_or("version", r.version.value_or(""), r.version.has_value());
    null_or("uptime_s", r.uptime_s.value_or(0), r.uptime_s.has_value());
    w.Field("needs_repair", r.needs_repair);
    w.Field("needs_repair_reason", r.needs_repair_reason);
    w.Field("clock_skew", r.clock_skew);
    null_or("background_repair", r.repair.on.value_or(false), r.repair.on.has_value());
    null_or("repair_period_ms", r.repair.period_ms.value_or(0), r.repair.period_ms.has_value());
    null_or("last_full_repair_ms", r.repair.last_full_ms.value_or(0),
            r.repair.last_full_ms.has_value());
    null_or("gc_blocked_ranges", r.repair.gc_blocked_ranges.value_or(0),
            r.up && r.repair.gc_blocked_ranges.has_value());
    w.Key("gc_blocked_by").BeginArray();
    for (uint32_t id : r.up ? r.repair.gc_blocked_by : std::vector<uint32_t>{}) w.Value(id);
    w.EndArray();
    w.End();
  }
  w.EndArray();
  PrintConsensusJson(w, consensus);
  PrintRebalanceJson(w, rebalance);
  w.End();
  std::cout << w.str() << "\n";
}

void PrintTable(const std::string& dir, const std::optional<ClusterMap>& map, uint64_t expected,
                const std::vector<NodeRow>& rows, const Rebalance& rebalance,
                const ConsensusView& consensus) {
  if (map) {
    std::printf("cluster %llu: epoch %llu, %s mode, replicas %u, write quorum %u, read quorum %u\n",
                static_cast<unsigned long long>(map->cluster_id()),
                static_cast<unsigned long long>(map->epoch()),
                std::string(PlacementModeName(map->params().mode)).c_str(),
                map->EffectiveReplicas(), map->EffectiveWriteQuorum(), map->EffectiveReadQuorum());
  } else if (expected != 0) {
    std::printf("cluster %llu in %s: no node of it answered\n",
                static_cast<unsigned long long>(expected), dir.c_str());
  } else {
    std::printf("cluster in %s: no node answered\n", dir.c_str());
  }
  std::printf("rebalance: %s\n%s\n", RebalanceLine(rebalance).c_str(),
              ConsensusLines(consensus).c_str());
  // 98 columns: REDIS and METRICS show the port alone when the listener is on the node's host.
  std::printf("%4s  %-21s  %-12s  %-7s  %-13s  %7s  %6s  %5s  %7s\n", "ID", "ADDRESS", "STATE",
              "MAP", "PID", "KEYS", "SHARE", "REDIS", "METRICS");
  for (const NodeRow& r : rows) {
    std::string pid = "-";
    if (r.pid) pid = std::to_string(*r.pid) + (r.alive ? "" : " (dead)");
    std::string keys = "-";
    if (r.keys) keys = r.keys_estimate ? ApproxCount(*r.keys) : std::to_string(*r.keys);
    char share[16] = "-";
    if (r.share_pct) std::snprintf(share, sizeof(share), "%.1f%%", *r.share_pct);
    std::printf("%4u  %-21s  %-12s  %-7s  %-13s  %7s  %6s  %5s  %7s\n", r.id,
                r.address.empty() ? "-" : r.address.c_str(), r.state.c_str(),
                r.map_state.value_or("-").c_str(), pid.c_str(), keys.c_str(), share,
                PortOnHost(r.up ? r.redis : std::nullopt, r.address).c_str(),
                PortOnHost(r.up ? r.metrics : std::nullopt, r.address).c_str());
  }
  std::printf(
      "\nKEYS: live keys (a copy per replica; ~: estimate); SHARE: share of all copies "
      "under the map\n");
  std::printf(
      "REDIS, METRICS: ports of its Redis and metrics listeners on its host (--json: "
      "addresses)\n");
  // Background anti-entropy, one line for every node that reports it.
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::string repair;
  for (const NodeRow& r : rows) {
    const std::string said = r.up ? DescribeBackgroundRepair(r.repair, now_ms) : "";
    if (!said.empty())
      repair += (repair.empty() ? "" : "; ") + ("node " + std::to_string(r.id) + " " + said);
  }
  if (!repair.empty()) std::printf("repair: %s\n", repair.c_str());
  // Tombstone GC held back by a replica that stays down: said, never silent.
  std::string gc;
  for (const NodeRow& r : rows) {
    const std::string said = r.up ? DescribeGcBlocked(r.repair) : "";
    if (!said.empty())
      gc += (gc.empty() ? "" : "; ") + ("node " + std::to_string(r.id) + " " + said);
  }
  if (!gc.empty()) std::printf("gc: %s\n", gc.c_str());
  for (const NodeRow& r : rows) {
    if (!r.problem.empty())
      std::printf("node %u: %s: %s\n", r.id, r.state.c_str(), r.problem.c_str());
  }
}

}  // namespace

int PrintClusterStatus(const GlobalOptions& g, const std::string& dir, NodeProber* prober,
                       std::string_view outcome) {
  const auto timeout = std::chrono::milliseconds(std::min<uint32_t>(g.timeout_ms, 2000));
  const Rebalance rebalance = QueryRebalance(g, dir, timeout);
  std::map<uint32_t, NodeRow> rows;
  std::vector<std::string> seeds = g.cluster;
  if (g.cluster.empty()) {
    // The directory's nodes: address from the port file the node wrote, else the one it was
    // launched with; pid and liveness from the launcher's files.
    for (uint32_t id : ListNodeIds(dir)) {
      const std::string node_dir = NodeDir(dir, id);
      NodeRow& r = rows[id];
      r.id = id;
      std::optional<uint16_t> port = ReadPortFile(node_dir);
      if (!port) {
        if (auto args = ReadArgsFile(node_dir); args.ok()) port = ListenPortInArgs(*args);
      }
      if (port && *port != 0) r.address = "127.0.0.1:" + std::to_string(*port);
      r.pid = ReadPidFile(node_dir);
      r.alive = RunningNodePid(node_dir).has_value();
      if (!r.address.empty()) seeds.push_back(r.address);
    }
    if (rows.empty()) {
      return ReportError("no cluster in " + dir + " (start one with 'shardkv cluster up')",
                         kExitUnreachable);
    }
  }
  std::map<std::string, Probe> probes;
  ProbeAll(prober, seeds, timeout, &probes);
  // This cluster: the id in cluster.conf, or with --cluster the first seed's that answered.
  uint64_t expected = DirClusterId(g, dir);
  if (expected == 0) {
    for (const auto& a : seeds) {
      if (auto it = probes.find(a); it != probes.end() && it->second.map) {
        expected = it->second.map->cluster_id();
        break;
      }
    }
  }
  std::optional<ClusterMap> map;
  std::string map_from;  // the answering node: the one whose map is shown
  for (auto& [address, p] : probes) {
    if (!p.map || p.map->cluster_id() != expected) continue;  // another cluster's map
    if (!map || p.map->epoch() > map->epoch()) {
      map = p.map;
      map_from = address;
    }
  }
  if (map) {
    const std::map<uint32_t, double> shares = TokenCopyShares(*map).Percents();
    const std::map<uint32_t, double> primary = PrimaryShares(*map);
    std::vector<std::string> more;
    for (const ClusterNode& n : map->nodes()) {
      NodeRow& r = rows[n.id];
      r.id = n.id;
      r.address = n.address;  // what clients and peers use
      r.map_state = std::string(NodeStateName(n.state));
      if (auto it = shares.find(n.id); it != shares.end()) r.share_pct = it->second;
      if (auto it = primary.find(n.id); it != primary.end()) r.primary_pct = it->second;
      more.push_back(n.address);
    }
    ProbeAll(prober, more, timeout, &probes);
  }
  // With --cluster, a listed node the map does not name (unformed, or of another cluster) gets
  // a row under the id it reports, so that it is shown rather than dropped.
  for (const std::string& a : g.cluster) {
    auto it = probes.find(a);
    if (it == probes.end() || !it->second.up) continue;
    bool listed = false;
    for (const auto& [id, r] : rows) listed = listed || r.address == a;
    const int64_t id = it->second.node_id.value_or(0);
    if (listed || id <= 0 || id > UINT32_MAX || rows.count(static_cast<uint32_t>(id)) != 0) {
      continue;
    }
    rows[static_cast<uint32_t>(id)].id = static_cast<uint32_t>(id);
    rows[static_cast<uint32_t>(id)].address = a;
  }
  const Probe* answering = map_from.empty() ? nullptr : &probes[map_from];
  // Members a rebuild could stream from: answering as themselves, not needing repair.
  std::set<uint32_t> serving;
  for (size_t i = 0; map && i < map->nodes().size(); ++i) {
    const ClusterNode& n = map->nodes()[i];
    const Probe& p = probes[n.address];
    if (p.up && p.map && p.map->cluster_id() == expected && p.node_id == int64_t{n.id} &&
        !p.repair.reason) {
      serving.insert(n.id);
    }
  }

  std::vector<NodeRow> out;
  bool any_up = false;
  std::string foreign;  // "A is node N of cluster Y" for the error line when no node is ours
  for (auto& [id, r] : rows) {
    if (auto it = probes.find(r.address); it != probes.end() && it->second.up) {
      const Probe& p = it->second;
      r.up = true;
      r.state = "up";
      r.disk_full = p.disk_full;
      FillReported(p, id, answering, &r);
      if (p.map) r.node_cluster_id = p.map->cluster_id();
      if (p.unformed) {
        r.state = "unformed";
        r.problem = r.address +
                    " belongs to no cluster yet: form one with 'shardkv cluster init', or add it "
                    "with 'shardkv cluster join'";
      } else if (!p.map) {
        r.state = "mismatch";
        r.problem = "it answers but has no cluster map";
      } else if (p.map->cluster_id() != expected) {
        r.state = "mismatch";
        r.problem = r.address + " answers as cluster " + std::to_string(p.map->cluster_id()) +
                    ", not cluster " + std::to_string(expected) +
                    MismatchAdvice(map, id, r.alive, serving);
        if (foreign.empty()) {
          foreign = r.address + " belongs to cluster " + std::to_string(p.map->cluster_id());
        }
      } else if (p.node_id && *p.node_id != static_cast<int64_t>(id)) {
        r.state = "mismatch";
        r.problem = r.address + " answers as node " + std::to_string(*p.node_id);
      }
      if (r.state == "mismatch" || r.state == "unformed") {
        r.up = false;  // its answers are not this node's
      } else {
        r.keys = p.keys;
        r.keys_estimate = p.keys_estimate;
        if (r.disk_full) {
          r.state = "disk-full";
          r.problem = "its writes fail: no space left on its disk";
        } else if (p.storage_error) {
          r.state = "disk-error";
          r.problem = "its storage fails: " + *p.storage_error +
                      "; it coordinates no writes, and recovers by itself once the cause clears";
        }
        if (p.clock_skewed) {
          r.clock_skew = true;
          r.problem = (r.problem.empty() ? "" : r.problem + "; ") + "clock_skew: its clock is " +
                      std::to_string(p.clock_offset_to_peers) +
                      " ms off the other members' (more than max_clock_offset_ms): it sends its "
                      "client requests on to a node whose clock agrees; fix its time sync (NTP)";
        }
      }
    }
    any_up = any_up || r.up;
    out.push_back(std::move(r));
  }
  // With one replica nothing needs repair (design.md "Needs repair"): no replica refuses.
  if (map && map->EffectiveReplicas() > 1) MarkNeedsRepair(probes, *map, expected, &out);
  if (map && g.cluster.empty()) {
    const std::set<uint32_t> strangers = DirectoriesNotInMap(*map, dir);
    // Status only reports: retiring a node that left is 'cluster retire-node' (or the end of
    // 'rebalance watch'), never a side effect of looking.
    const std::optional<uint32_t> left = rebalance ? NodeThatLeft(*rebalance) : std::nullopt;
    for (NodeRow& r : out) {
      if (strangers.count(r.id) == 0) continue;
      const bool gone = left == r.id;
      r.state = gone ? "left" : "not-member";
      r.up = false;
      r.problem = gone ? LeftNodeAdvice(r.id, rebalance->record.change_id, r.alive)
                       : NotMemberAdvice(r.id, map->cluster_id());
    }
  }
  std::map<uint32_t, ConsensusReport> consensus_reports;
  std::vector<uint32_t> members, up_members;
  for (const NodeRow& r : out) {
    if (r.up) consensus_reports[r.id] = probes[r.address].consensus;
  }
  for (const ClusterNode& n : map ? map->nodes() : std::vector<ClusterNode>()) {
    members.push_back(n.id);
    if (n.state == NodeState::kUp) up_members.push_back(n.id);  // (the voters the map calls for)
  }
  const ConsensusView consensus = SummarizeConsensus(consensus_reports, members, up_members);
  if (g.json) {
    PrintJson(map, map_from, expected, out, rebalance, consensus, outcome);
  } else {
    PrintTable(dir, map, expected, out, rebalance, consensus);
  }
  if (!any_up && !foreign.empty()) {
    return ReportError("no node of cluster " + std::to_string(expected) + " answered; " + foreign +
                           " (another cluster took its ports?)",
                       kExitUnreachable);
  }
  return any_up ? kExitOk : kExitUnreachable;
}

}  // namespace shardkv::cli
