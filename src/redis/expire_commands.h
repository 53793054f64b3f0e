// ExpireCommands: the Redis commands that set or read a key's expiry: SET with EX|PX|EXAT|PXAT|
// KEEPTTL (and NX|XX|GET), SETEX, PSETEX, GETEX, EXPIRE|PEXPIRE|EXPIREAT|PEXPIREAT (NX|XX|GT|LT),
// TTL, PTTL, EXPIRETIME, PEXPIRETIME and PERSIST, as typed calls of the node's client operations.
//
// Expiry is its own last-write-wins register (design.md "Expiry"), so an EXPIRE never
// overwrites a value. The conditional forms (EXPIRE NX|XX|GT|LT, PERSIST, GETEX, SET NX|XX|GET)
// read first and then write: not atomic across coordinators (docs/redis.md).
// The node's wall clock decides "now" for relative times and for expiry.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "redis/command_context.h"
#include "redis/redis_session.h"

namespace shardkv::redis {

class ExpireCommands {
 public:
  explicit ExpireCommands(const CommandContext* context) : c_(context) {}

  // True if a SET's `args` carry an expiry option (EX, PX, EXAT, PXAT, KEEPTTL): such a SET is
  // answered here, a plain one by KeyCommands (command_routes.h, Handler::kSet).
  static bool SetTakesExpiry(const Args& args);
  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  struct Stored {
    bool found = false;
    std::string value;
    uint64_t expires_at_ms = 0;  // 0 = no expiry
  };
  using ReadDone = std::function<void(std::string error, Stored stored)>;
  using WriteDone = std::function<void(std::string error)>;

  void Set(const RedisSession& session, Args args, ReplyDone done);
  void GetEx(const RedisSession& session, Args args, ReplyDone done);
  void Expire(const RedisSession& session, Args args, ReplyDone done);
  void Ttl(const RedisSession& session, Args args, ReplyDone done);
  void Persist(const RedisSession& session, Args args, ReplyDone done);

  void Read(const RedisSession& session, const std::string& key, ReadDone done);
  // Writes `value` expiring at `expires_at_ms` (0: none; keep_ttl: the value only). An expiry
  // already past deletes the key instead, as redis's checkAlreadyExpired does.
  void Write(const RedisSession& session, const std::string& key, std::string value,
             uint64_t expires_at_ms, bool keep_ttl, WriteDone done);
  // Sets (or with 0 clears) the expiry register only; a time already past deletes the key.
  void SetExpiry(const RedisSession& session, const std::string& key, uint64_t expires_at_ms,
                 WriteDone done);

  const CommandContext* c_;
};

}  // namespace shardkv::redis
