#include "redis/command_routes.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <utility>

#include "redis/ascii_case.h"

namespace shardkv::redis {
namespace {

// Which group runs each implemented command. Every top-level command of the generated table must
// be named here once: one that is not gets no row (unknown to clients), and the test fails.
const std::map<std::string_view, Handler>& HandlerNames() {
  static const auto* names = [] {
    auto* m = new std::map<std::string_view, Handler>;
    for (std::string_view n : {"ping", "echo", "hello", "auth", "select", "quit", "reset", "client",
                               "command", "config", "function", "time", "shardkv"}) {
      (*m)[n] = Handler::kConnection;
    }
    for (std::string_view n :
         {"get", "mget", "mset", "del", "unlink", "exists", "strlen", "getrange", "type"}) {
      (*m)[n] = Handler::kKeys;
    }
    (*m)["set"] = Handler::kSet;
    for (std::string_view n :
         {"setex", "psetex", "getex", "expire", "pexpire", "expireat", "pexpireat", "ttl", "pttl",
          "expiretime", "pexpiretime", "persist"}) {
      (*m)[n] = Handler::kExpire;
    }
    for (std::string_view n : {"scan", "keys", "randomkey", "flushdb", "flushall"}) {
      (*m)[n] = Handler::kScan;
    }
    for (std::string_view n : {"setnx", "getset", "getdel", "msetnx"}) (*m)[n] = Handler::kRmw;
    for (std::string_view n : {"incr", "incrby", "decr", "decrby"}) (*m)[n] = Handler::kCounter;
    for (std::string_view n : {"hset", "hmset", "hsetnx", "hget", "hmget", "hdel", "hgetall",
                               "hkeys", "hvals", "hlen", "hexists", "hstrlen", "hscan"}) {
      (*m)[n] = Handler::kHash;
    }
    for (std::string_view n :
         {"sadd", "srem", "smembers", "sismember", "smismember", "scard", "sscan", "srandmember"}) {
      (*m)[n] = Handler::kSets;
    }
    for (std::string_view n : {"info", "dbsize", "cluster"}) (*m)[n] = Handler::kCluster;
    return m;
  }();
  return *names;
}

struct Routes {
  std::vector<CommandRow> rows;
  std::unordered_map<std::string_view, const CommandRow*> by_name;
  std::vector<const CommandRow*> ordered;
};

const Routes& TheRoutes() {
  static const auto* routes = [] {
    auto* r = new Routes;
    // The implemented commands: their spec, and their group (a command of the generated table
    // that no group names would have no handler: it is left out, and the test fails).
    for (const CommandSpec* spec : TopLevelCommands()) {
      auto it = HandlerNames().find(spec->name);
      if (it == HandlerNames().end()) continue;
      r->rows.push_back(CommandRow{std::string(spec->name), it->second, spec, 0, ""});
    }
    // The refused commands, each with its reason.
    const std::string rmw =
        " is refused by shardkv: a read-modify-write is not atomic under last-write-wins "
        "replication across coordinators (docs/redis.md)";
    const std::pair<const char*, int> rmw_commands[] = {{"incrbyfloat", 3}, {"append", 3},
                                                        {"setrange", 4},    {"rename", 3},
                                                        {"renamenx", 3},    {"copy", -3}};
    for (const auto& [c, arity] : rmw_commands) {
      r->rows.push_back(CommandRow{c, Handler::kRefused, nullptr, arity, Upper(c) + rmw});
    }
    const std::pair<const char*, int> hash_counters[] = {{"hincrby", 4}, {"hincrbyfloat", 4}};
    for (const auto& [c, arity] : hash_counters) {
      r->rows.push_back(CommandRow{
          c, Handler::kRefused, nullptr, arity,
          Upper(c) + " is refused by shardkv: a hash field is a last-write-wins register, and "
                     "counter fields are not built yet (docs/redis.md)"});
    }
    const std::pair<const char*, int> transactions[] = {
        {"multi", 1}, {"exec", 1}, {"discard", 1}, {"watch", -2}, {"unwatch", 1}};
    for (const auto& [c, arity] : transactions) {
      std::string why = Upper(c) + " is refused by shardkv: it has no multi-key transactions";
      if (std::string_view(c) == "multi")
        why += " (the commands up to EXEC or DISCARD are not run)";
      r->rows.push_back(CommandRow{c, Handler::kRefused, nullptr, arity, why});
    }
    // (rows is complete: the pointers below stay valid.)
    for (const CommandRow& row : r->rows) {
      r->by_name.emplace(row.name, &row);
      r->ordered.push_back(&row);
    }
    std::sort(r->ordered.begin(), r->ordered.end(),
              [](const CommandRow* a, const CommandRow* b) { return a->name < b->name; });
    return r;
  }();
  return *routes;
}

}  // namespace

const CommandRow* FindRow(std::string_view lower_name) {
  const auto& by_name = TheRoutes().by_name;
  auto it = by_name.find(lower_name);
  return it == by_name.end() ? nullptr : it->second;
}

const std::vector<const CommandRow*>& CommandRows() { return TheRoutes().ordered; }

bool RefusedArityOk(const CommandRow& row, size_t argc) {
  const auto n = static_cast<int>(argc);
  return row.refused_arity > 0 ? n == row.refused_arity : n >= -row.refused_arity;
}

}  // namespace shardkv::redis
