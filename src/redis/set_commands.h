// SetCommands: SADD, SREM, SMEMBERS, SISMEMBER, SMISMEMBER, SCARD, SSCAN and SRANDMEMBER
// (design.md "Sets"). Writes are one SetWrite operation: an add-wins observed-remove set, so SADDs
// of different members through different nodes at once both survive, and an SREM removes only
// the adds it saw. Reads are one SetRead of the whole set, cut to what the command asks for. A
// key holding another kind of value gets Redis's WRONGTYPE.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include "redis/command_context.h"
#include "redis/redis_session.h"

namespace shardkv::redis {

class SetCommands {
 public:
  explicit SetCommands(const CommandContext* context) : c_(context) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  void Write(const RedisSession& session, Args args, ReplyDone done);
  void Read(const RedisSession& session, Args args, ReplyDone done);

  const CommandContext* c_;
};

}  // namespace shardkv::redis
