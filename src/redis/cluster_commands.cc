#include "redis/cluster_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>

#include "redis/ascii_case.h"
#include "resp/resp_writer.h"
#include "shardkv/change.h"
#include "shardkv/stats.h"

namespace shardkv::redis {
namespace {

// "host:port" or "[v6]:port" into its parts (the addresses come from the members' own stats).
bool SplitAddress(const std::string& address, std::string* host, uint16_t* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[') *host = host->substr(1, host->size() - 2);
  const std::string digits = address.substr(colon + 1);
  if (digits.size() > 5 || digits.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const unsigned long value = std::stoul(digits);
  if (value > 65535) return false;
  *port = static_cast<uint16_t>(value);
  return true;
}

struct SlotRange {
  uint32_t start = 0;
  uint32_t end = 0;
  const NodeView* node = nullptr;
  std::string host;
  uint16_t port = 0;
};

// The members with a Redis address, each given an equal contiguous share of the slots.
std::vector<SlotRange> SpreadSlots(const std::vector<NodeView>& nodes) {
  std::vector<const NodeView*> serving;
  for (const NodeView& n : nodes) {
    if (!n.redis_address.empty()) serving.push_back(&n);
  }
  std::vector<SlotRange> out;
  for (size_t i = 0; i < serving.size(); ++i) {
    SlotRange r;
    r.start = static_cast<uint32_t>(i * kClusterSlots / serving.size());
    r.end = static_cast<uint32_t>((i + 1) * kClusterSlots / serving.size() - 1);
    r.node = serving[i];
    if (!SplitAddress(serving[i]->redis_address, &r.host, &r.port)) continue;
    out.push_back(std::move(r));
  }
  return out;
}

int64_t Counter(const NodeView& n, std::string_view name) {
  auto it = n.counters.find(std::string(name));
  return it == n.counters.end() ? 0 : it->second;
}

void Text(resp::RespWriter& w, const std::string& text) {
  // INFO and CLUSTER INFO/NODES are bulk strings in RESP2 and verbatim strings in RESP3, as
  // redis-server writes them.
  w.Verbatim(text, "txt");
}

}  // namespace

uint32_t KeySlot(std::string_view key) {
  const size_t open = key.find('{');
  if (open != std::string_view::npos) {
    const size_t close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  uint16_t crc = 0;
  for (unsigned char c : key) {
    crc ^= static_cast<uint16_t>(c << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc & (kClusterSlots - 1);
}

std::string RedisNodeId(uint64_t cluster_id, uint32_t node_id) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%016llx%016llx%08x", static_cast<unsigned long long>(cluster_id),
                0ULL, node_id);
  return buf;
}

KeyspaceCounts CountKeys(const std::vector<NodeView>& nodes, uint32_t replicas) {
  int64_t keys = 0;
  int64_t expiring = 0;
  for (const NodeView& n : nodes) {
    const bool counted = n.counters.count(std::string(stats::live_keys)) > 0;
    keys += Counter(n, counted ? stats::live_keys : stats::keys_approx);
    expiring += Counter(n, stats::live_keys_expiring);
  }
  const int64_t r = std::max<int64_t>(1, replicas);
  return {(keys + r / 2) / r, (expiring + r / 2) / r};
}

bool OwnSlotRange(const std::vector<NodeView>& nodes, uint32_t self_id, uint32_t* first,
                  uint32_t* last) {
  for (const SlotRange& r : SpreadSlots(nodes)) {
    if (r.node->id != self_id) continue;
    *first = r.start;
    *last = r.end;
    return true;
  }
  return false;
}

int64_t SlotShare(int64_t total, uint32_t first, uint32_t last) {
  auto upto = [total](uint32_t slots) { return total * slots / kClusterSlots; };
  return upto(last + 1) - upto(first);
}

void ClusterCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  if (name == "info") return Info(session, std::move(args), std::move(done));
  auto map = c_->view->Map();
  if (name == "cluster" && Lower(args[1]) == "keyslot") {
    return done(":" + std::to_string(KeySlot(args[2])) + "\r\n");
  }
  if (map == nullptr) {
    return done("-CLUSTERDOWN node " + std::to_string(c_->self_id) +
                " is unformed (not in a cluster yet)\r\n");
  }
  const std::string sub = name == "cluster" ? Lower(args[1]) : "";
  const RedisSession* s = &session;
  c_->view->Fetch([this, s, name, sub, args = std::move(args), map,
                   done = std::move(done)](std::vector<NodeView> nodes) mutable {
    if (name == "dbsize") {
      int64_t keys = CountKeys(nodes, map->EffectiveReplicas()).keys;
      // Node-scoped: this node's share, so that DBSIZE summed over the primaries (redis-py's
      // RedisCluster.dbsize()) is the cluster's count, as each key is scanned on one node.
      if (s->node_scoped()) {
        uint32_t first = 0, last = 0;
        keys = OwnSlotRange(nodes, c_->self_id, &first, &last) ? SlotShare(keys, first, last) : 0;
      }
      return done(":" + std::to_string(keys) + "\r\n");
    }
    Cluster(*s, sub, std::move(args), std::move(nodes), std::move(done));
  });
}

void ClusterCommands::Cluster(const RedisSession& session, const std::string& sub, Args args,
                              std::vector<NodeView> nodes, ReplyDone done) {
  (void)args;
  auto map = c_->view->Map();
  const uint64_t cluster_id = map ? map->cluster_id() : 0;
  const uint64_t epoch = map ? map->epoch() : 0;
  const std::vector<SlotRange> ranges = SpreadSlots(nodes);
  std::string out;
  resp::RespWriter w(&out, session.protocol());
  if (sub == "myid") {
    w.Bulk(RedisNodeId(cluster_id, c_->self_id));
  } else if (sub == "info") {
    std::string t;
    const std::string n = std::to_string(ranges.size());
    t += "cluster_enabled:1\r\ncluster_state:" + std::string(ranges.empty() ? "fail" : "ok");
    t += "\r\ncluster_slots_assigned:" + std::to_string(ranges.empty() ? 0 : kClusterSlots);
    t += "\r\ncluster_slots_ok:" + std::to_string(ranges.empty() ? 0 : kClusterSlots);
    t += "\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:" + n;
    t += "\r\ncluster_size:" + n + "\r\ncluster_current_epoch:" + std::to_string(epoch);
    t += "\r\ncluster_my_epoch:" + std::to_string(epoch);
    t += "\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n";
    t += "total_cluster_links_buffer_limit_exceeded:0\r\n";
    Text(w, t);
  } else if (sub == "slots") {
    w.ArrayHeader(ranges.size());
    for (const SlotRange& r : ranges) {
      w.ArrayHeader(3);
      w.Integer(r.start);
      w.Integer(r.end);
      w.ArrayHeader(4);
      w.Bulk(r.host);
      w.Integer(r.port);
      w.Bulk(RedisNodeId(cluster_id, r.node->id));
      w.MapHeader(0);
    }
  } else if (sub == "shards") {
    w.ArrayHeader(ranges.size());
    for (const SlotRange& r : ranges) {
      w.MapHeader(2);
      w.Bulk("slots");
      w.ArrayHeader(2);
      w.Integer(r.start);
      w.Integer(r.end);
      w.Bulk("nodes");
      w.ArrayHeader(1);
      w.MapHeader(7);
      w.Bulk("id");
      w.Bulk(RedisNodeId(cluster_id, r.node->id));
      w.Bulk("port");
      w.Integer(r.port);
      w.Bulk("ip");
      w.Bulk(r.host);
      w.Bulk("endpoint");
      w.Bulk(r.host);
      w.Bulk("role");
      w.Bulk("master");
      w.Bulk("replication-offset");
      w.Integer(0);
      w.Bulk("health");
      w.Bulk("online");
    }
  } else {  // nodes
    std::string t;
    for (const SlotRange& r : ranges) {
      const bool self = r.node->id == c_->self_id;
      t += RedisNodeId(cluster_id, r.node->id) + " " + r.host + ":" + std::to_string(r.port) +
           "@0 " + (self ? "myself,master" : "master") + " - 0 0 " + std::to_string(epoch) +
           " connected " + std::to_string(r.start) + "-" + std::to_string(r.end) + "\n";
    }
    Text(w, t);
  }
  done(std::move(out));
}

void ClusterCommands::Info(const RedisSession& session, Args args, ReplyDone done) {
  std::set<std::string> asked;
  for (size_t i = 1; i < args.size(); ++i) asked.insert(Lower(args[i]));
  const bool all =
      asked.empty() || asked.count("all") || asked.count("everything") || asked.count("default");
  auto want = [all, asked](const char* section) { return all || asked.count(section) > 0; };
  const resp::Protocol p = session.protocol();
  const std::string consistency(ConsistencyName(session.consistency()));
  auto map = c_->view->Map();
  c_->view->Fetch([this, want, p, map, consistency,
                   done = std::move(done)](std::vector<NodeView> nodes) {
    const NodeView* self = nullptr;
    for (const NodeView& n : nodes) {
      if (n.id == c_->self_id) self = &n;
    }
    const NodeView empty;
    const NodeView& me = self != nullptr ? *self : empty;
    const KeyspaceCounts counts =
        map ? CountKeys(nodes, map->EffectiveReplicas()) : KeyspaceCounts{};
    const int64_t keys = counts.keys;
    const uint64_t uptime = static_cast<uint64_t>(Counter(me, stats::uptime_s));
    const ServerCounters zero_counters;
    const ServerCounters& sc = c_->counters != nullptr ? *c_->counters : zero_counters;
    std::string port = c_->redis_address.substr(c_->redis_address.rfind(':') + 1);
    std::string t;
    auto section = [&](const char* name, const char* title, std::string body) {
      if (!want(name)) return;
      if (!t.empty()) t += "\r\n";
      t += std::string("# ") + title + "\r\n" + body;
    };
    section("server", "Server",
            std::string("redis_version:") + kRedisCompatVersion +
                "\r\nredis_mode:standalone\r\nos:Linux\r\narch_bits:64\r\nprocess_id:" +
                std::to_string(::getpid()) + "\r\ntcp_port:" + port + "\r\nuptime_in_seconds:" +
                std::to_string(uptime) + "\r\nuptime_in_days:" + std::to_string(uptime / 86400) +
                "\r\nexecutable:shardkv-node\r\n");
    section("clients", "Clients",
            "connected_clients:" + std::to_string(sc.connected_clients.load()) +
                "\r\nblocked_clients:0\r\ntracking_clients:0\r\nmaxclients:10000\r\n");
    section("memory", "Memory",
            "used_memory:" + std::to_string(Counter(me, stats::bytes_approx)) +
                "\r\nmaxmemory:0\r\nmaxmemory_policy:noeviction\r\n");
    section("persistence", "Persistence",
            "loading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:0\r\n"
            "rdb_bgsave_in_progress:0\r\nrdb_last_bgsave_status:ok\r\naof_enabled:0\r\n"
            "aof_rewrite_in_progress:0\r\n");
    section("stats", "Stats",
            "total_connections_received:" + std::to_string(sc.connections_received.load()) +
                "\r\ntotal_commands_processed:" + std::to_string(sc.commands_processed.load()) +
                "\r\ninstantaneous_ops_per_sec:0\r\nrejected_connections:" +
                std::to_string(sc.rejected_connections.load()) +
                "\r\ntotal_error_replies:0\r\nexpired_keys:0\r\nevicted_keys:0\r\n");
    section("replication", "Replication",
            "role:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n");
    section("keyspace", "Keyspace",
            keys > 0 ? "db0:keys=" + std::to_string(keys) +
                           ",expires=" + std::to_string(counts.expiring) + ",avg_ttl=0\r\n"
                     : "");
    section("cluster", "Cluster", "cluster_enabled:1\r\n");
    std::string change = "none";
    if (map && map->change() != nullptr) {
      change = std::string(ChangeStateName(map->change()->state));
    }
    section(
        "shardkv", "Shardkv",
        "shardkv_node_id:" + std::to_string(c_->self_id) +
            "\r\nshardkv_mode:" + (map ? "formed" : "unformed") +
            "\r\nshardkv_cluster_id:" + std::to_string(map ? map->cluster_id() : 0) +
            "\r\nshardkv_epoch:" + std::to_string(map ? map->epoch() : 0) +
            "\r\nshardkv_nodes:" + std::to_string(map ? map->nodes().size() : 0) +
            "\r\nshardkv_replication_factor:" + std::to_string(map ? map->EffectiveReplicas() : 0) +
            "\r\nshardkv_rebalance_state:" + change +
            "\r\nshardkv_rebalance_pending:" + (map && map->has_pending() ? "1" : "0") +
            "\r\nshardkv_keys_estimate:" + std::to_string(keys) +
            "\r\nshardkv_connection_consistency:" + consistency + "\r\n");
    std::string out;
    resp::RespWriter w(&out, p);
    Text(w, t);
    done(std::move(out));
  });
}

}  // namespace shardkv::redis
