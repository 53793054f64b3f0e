// RedisCommands: runs a connection's parsed commands in order and returns their replies
// (design.md "Redis front end").
//
// For each command, as redis-server's processCommand: an unknown command (or subcommand) is
// refused, then the arity is checked against the command table, then authentication (only
// commands flagged no_auth run before AUTH). Commands shardkv deliberately does not offer
// (INCR, APPEND, RENAME and the like, transactions) are refused with the reason, not as
// unknown. A refused MULTI leaves the connection in a refused transaction: every command up to
// EXEC or DISCARD is answered with EXECABORT and not run, and EXEC fails with EXECABORT.
//
// Pipelining: Run() is given every command a connection has buffered. A run of consecutive
// GETs becomes one multiGet, a run of plain SETs one multiPut (one coordinator round each, as
// Dragonfly squashes pipelines); the replies still come back one per command, in order.
//
// Thread-safety: thread-safe. A session runs one Run() at a time (the connection's job).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis/cluster_commands.h"
#include "redis/command_context.h"
#include "redis/counter_commands.h"
#include "redis/expire_commands.h"
#include "redis/hash_commands.h"
#include "redis/key_commands.h"
#include "redis/redis_session.h"
#include "redis/rmw_commands.h"
#include "redis/scan_commands.h"
#include "redis/set_commands.h"

namespace shardkv::redis {

class RedisCommands {
 public:
  // `context` must outlive the object and every Run() in flight.
  explicit RedisCommands(const CommandContext* context)
      : c_(context),
        keys_(context),
        cluster_(context),
        expire_(context),
        scans_(context),
        rmw_(context, &keys_),
        counters_(context),
        hashes_(context),
        sets_(context) {}

  // Runs `commands` in order; `done` gets the concatenated replies and whether the connection
  // must close after writing them (QUIT). Commands after a QUIT are not run. `done` runs once,
  // on the caller's thread or a network thread.
  void Run(std::shared_ptr<RedisSession> session, std::vector<Args> commands,
           std::function<void(std::string replies, bool close)> done);

 private:
  struct Runner;
  // Runs steps until one completes asynchronously (it resumes the loop) or the batch ends; a
  // loop, not recursion, so a long pipeline answered synchronously does not grow the stack.
  void Loop(const std::shared_ptr<Runner>& runner);
  // Starts commands[i...] (one, or a batch of GETs or SETs) and reports the next index through
  // `next` with the replies appended to the runner.
  void Step(const std::shared_ptr<Runner>& runner, std::function<void()> next);
  // The reply of a command that needs no data (connection and introspection commands); false if
  // `args` is not one of them.
  bool Local(RedisSession& session, const Args& args, std::string* out, bool* close);
  void Hello(RedisSession& session, const Args& args, std::string* out);
  void Client(RedisSession& session, const Args& args, std::string* out);
  void Command(const RedisSession& session, const Args& args, std::string* out);
  void Config(const RedisSession& session, const Args& args, std::string* out);
  // Checks a password against the secret; false and a WRONGPASS reply in *out if wrong.
  bool CheckPassword(const std::string& user, const std::string& password, std::string* out);

  const CommandContext* c_;
  KeyCommands keys_;
  ClusterCommands cluster_;
  ExpireCommands expire_;
  ScanCommands scans_;
  RmwCommands rmw_;
  CounterCommands counters_;
  HashCommands hashes_;
  SetCommands sets_;
};

// Why shardkv refuses `name` (lower case), or "" if it does not refuse it.
std::string RefusalReason(const std::string& name);
// The commands shardkv refuses with a reason (lower case, sorted); docs/redis.md lists each.
std::vector<std::string> RefusedCommands();

}  // namespace shardkv::redis
