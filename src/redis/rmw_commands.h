// RmwCommands: the read-modify-write string commands shardkv offers with a weaker guarantee
// than Redis: SETNX, GETSET, GETDEL and MSETNX, each a read followed by a write
// (docs/redis.md). Under last-write-wins across coordinators nothing makes the pair atomic:
// two clients' SETNX of one key may both answer 1 (the later write wins), a GETSET or GETDEL may
// return a value that a concurrent write has already replaced, and MSETNX may set some keys
// while a concurrent writer sets others. Like SET NX, none of them is a lock.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include <string>

#include "redis/command_context.h"
#include "redis/key_commands.h"
#include "redis/redis_session.h"

namespace shardkv::redis {

class RmwCommands {
 public:
  // `keys` (the string commands' reads and writes) must outlive the object.
  RmwCommands(const CommandContext* context, KeyCommands* keys) : c_(context), keys_(keys) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  const CommandContext* c_;
  KeyCommands* keys_;
};

}  // namespace shardkv::redis
