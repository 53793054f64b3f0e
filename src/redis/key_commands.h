// KeyCommands: the Redis string and key commands (GET, SET, MGET, MSET, DEL, UNLINK, EXISTS,
// STRLEN, GETRANGE, TYPE), as typed calls of the node's client operations (net/operations.h),
// at the connection's consistency level. Pipelined GETs and plain SETs arrive here as one batch and
// become one multiGet or multiPut: one coordinator round for the batch.
//
// Read-modify-write (SET NX|XX|GET) is a read followed by a write, not an atomic step
// (docs/redis.md: SET NX is not a lock). DEL and UNLINK count the keys a read found just
// before the delete.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/command_context.h"
#include "redis/redis_session.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {

class KeyCommands {
 public:
  explicit KeyCommands(const CommandContext* context) : c_(context) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);
  // A run of GETs (their keys), answered with one reply per key, in order.
  void GetBatch(const RedisSession& session, std::vector<std::string> keys,
                std::function<void(std::vector<std::string>)> done);
  // A run of plain SETs (key, value), answered with one reply per SET, in order.
  void SetBatch(const RedisSession& session, std::vector<std::pair<std::string, std::string>> kv,
                std::function<void(std::vector<std::string>)> done);
  // Reads `keys` (one multiGet); `done` gets each key's value (nullopt: missing) and what it
  // holds (a hash's or set's value is empty; kString when missing), or the error reply for the
  // whole command.
  void Read(const RedisSession& session, std::vector<std::string> keys,
            std::function<void(std::string error, std::vector<std::optional<std::string>>,
                               std::vector<net::ValueKind> kinds)>
                done);

 private:
  void Set(const RedisSession& session, Args args, ReplyDone done);
  void Delete(const RedisSession& session, Args args, ReplyDone done);

  const CommandContext* c_;
};

// The Redis error prefix of an error with `reason` (docs/design.md "Error reasons"): ERR,
// CLUSTERDOWN (the node or its side cannot serve: unformed, starting, no majority) or TRYAGAIN.
std::string_view RedisErrorPrefix(Status::Reason reason);
// The RESP error line for a failed net request: "-<RedisErrorPrefix> <message>".
std::string ErrorReply(const Status& status);
// Parses a Redis integer argument (redis's string2ll rules: optional '-', digits, no spaces).
bool ParseInt(const std::string& text, int64_t* out);

// The reply helpers every command group uses (one copy, so that unity builds and readers see one
// definition). A RESP error line "-<message>" (RESP2 and RESP3 alike); `message` starts with its
// prefix ("ERR ...", or "-WRONGTYPE ..." as ErrorReply gives it).
std::string Err(std::string_view message);
// What `write` writes in protocol `p`.
std::string Line(resp::Protocol p, const std::function<void(resp::RespWriter&)>& write);
// An integer reply ":n".
std::string IntegerReply(uint64_t n);
// The operation options of a session's commands: its consistency.
net::OpOptions Options(const RedisSession& session);
// Redis's messages for a bad integer argument and a bad option.
inline constexpr char kNotInteger[] = "value is not an integer or out of range";
inline constexpr char kSyntax[] = "syntax error";

}  // namespace shardkv::redis
