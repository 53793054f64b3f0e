// The Redis front end's one table of commands (design.md "Redis front end"): every command a
// client may name has one row, found by one hash lookup of its lower-case name: the handler group
// that runs it and either its generated COMMAND INFO spec (command_table.h: arity, flags, keys)
// or, for a command shardkv refuses by design, its Redis arity and the reason. RedisCommands::Step
// switches on the row's handler; nothing else decides where a command goes.
//
// A command with a spec but no handler, or a handler without a spec or refusal, fails
// tests/redis/command_routes_test.cc (which also runs every row through RedisCommands).
//
// Thread-safety: immutable after first use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "redis/command_table.h"

namespace shardkv::redis {

enum class Handler : uint8_t {
  kConnection,  // RedisCommands itself: PING, HELLO, AUTH, CLIENT, COMMAND, CONFIG, ...
  kKeys,        // KeyCommands: GET, MGET, MSET, DEL, EXISTS, ... (a run of GETs is batched)
  kSet,         // SET: plain ones are batched by KeyCommands, with an expiry ExpireCommands
  kExpire,      // ExpireCommands: EXPIRE, TTL, SETEX, GETEX, PERSIST, ...
  kScan,        // ScanCommands: SCAN, KEYS, RANDOMKEY, FLUSHDB, FLUSHALL
  kRmw,         // RmwCommands: SETNX, GETSET, GETDEL, MSETNX (documented weaker guarantees)
  kCounter,     // CounterCommands: INCR, INCRBY, DECR, DECRBY (convergent counters)
  kHash,        // HashCommands: HSET, HGET, HDEL, HGETALL, ... (fields merge one by one)
  kSets,        // SetCommands: SADD, SREM, SMEMBERS, ... (an add-wins observed-remove set)
  kCluster,     // ClusterCommands: INFO, DBSIZE, CLUSTER
  kRefused,     // refused by design, with the reason (reason kRefusedByPolicy)
};

struct CommandRow {
  std::string name;  // lower case
  Handler handler = Handler::kRefused;
  const CommandSpec* spec = nullptr;  // nullptr for a refused command
  // A refused command: Redis 7.0's arity (checked first, so a malformed call gets Redis's own
  // arity error) and why shardkv refuses it.
  int refused_arity = 0;
  std::string refusal;
};

// The row of `lower_name`; nullptr for a command nobody offers (unknown to the client).
const CommandRow* FindRow(std::string_view lower_name);
// Every row, in name order.
const std::vector<const CommandRow*>& CommandRows();
// True if `argc` arguments (the name included) fit a refused row's arity.
bool RefusedArityOk(const CommandRow& row, size_t argc);

}  // namespace shardkv::redis
