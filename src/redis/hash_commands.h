// HashCommands: HSET, HMSET, HSETNX, HGET, HMGET, HDEL, HGETALL, HKEYS, HVALS, HLEN, HEXISTS,
// HSTRLEN and HSCAN (design.md "Hashes"). Writes are one HashWrite operation: the coordinator
// writes the changed fields alone, each a last-write-wins register of its own, so HSETs of
// different fields through different nodes at once both survive. Reads are one HashRead of the
// whole hash, cut to what the command asks for. A key holding a string gets Redis's WRONGTYPE.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include "redis/command_context.h"
#include "redis/redis_session.h"
#include "shardkv/status.h"

namespace shardkv::redis {

class HashCommands {
 public:
  explicit HashCommands(const CommandContext* context) : c_(context) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  void Write(const RedisSession& session, Args args, ReplyDone done);
  void Read(const RedisSession& session, Args args, ReplyDone done);

  const CommandContext* c_;
};

// HSCAN's and SSCAN's arguments after the key (cursor, MATCH pattern, COUNT n), checked as Redis
// checks them; *match gets the pattern ("" when none). The whole collection comes back in one
// reply with cursor 0, so the cursor and COUNT are only checked.
Status ParseCollectionScan(const Args& args, std::string* match);

}  // namespace shardkv::redis
