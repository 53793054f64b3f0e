// CounterCommands: INCR, INCRBY, DECR and DECRBY (design.md "Counters"). Each is one Incr
// operation: the coordinator adds to its own entry of the counter, which replicas merge by
// maximum per writer, so increments through different nodes at once all count, and none that
// was acknowledged is lost to a partition, a restart, a migration or a repair. A SET or DEL
// resets the counter: an increment whose coordinator had not seen the SET or DEL when it read
// is ordered before it.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include "redis/command_context.h"
#include "redis/redis_session.h"

namespace shardkv::redis {

class CounterCommands {
 public:
  explicit CounterCommands(const CommandContext* context) : c_(context) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  const CommandContext* c_;
};

}  // namespace shardkv::redis
