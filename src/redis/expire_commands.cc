#include "redis/expire_commands.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <optional>
#include <set>
#include <utility>

#include "redis/ascii_case.h"
#include "redis/key_commands.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

std::string Int(int64_t v) { return ":" + std::to_string(v) + "\r\n"; }

std::string NullReply(resp::Protocol p) {
  std::string out;
  resp::RespWriter(&out, p).Null();
  return out;
}

std::string BulkReply(resp::Protocol p, std::string_view bytes) {
  std::string out;
  resp::RespWriter(&out, p).Bulk(bytes);
  return out;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string InvalidExpire(const std::string& command) {
  return Err("invalid expire time in '" + command + "' command");
}

enum class Unit { kSeconds, kMillis };

// redis's getExpireMillisecondsOrReply: a positive time, in ms, absolute (Unix ms). Returns ""
// and sets *at_ms, or the error reply.
std::string ParsePositiveExpire(const std::string& text, Unit unit, bool absolute,
                                const std::string& command, int64_t* at_ms) {
  int64_t v = 0;
  if (!ParseInt(text, &v)) return Err(kNotInteger);
  if (v <= 0 || (unit == Unit::kSeconds && v > LLONG_MAX / 1000)) return InvalidExpire(command);
  if (unit == Unit::kSeconds) v *= 1000;
  if (!absolute) {
    const int64_t now = NowMs();
    if (v > LLONG_MAX - now) return InvalidExpire(command);
    v += now;
  }
  *at_ms = v;
  return "";
}

// SET's and GETEX's expiry options (redis's parseExtendedStringArgumentsOrReply).
struct ExpiryOptions {
  bool nx = false, xx = false, get = false, keep_ttl = false, persist = false;
  std::optional<std::pair<std::string, std::string>> expire;  // (option, argument)
};

std::string ParseOptions(const Args& args, size_t first, bool is_set, ExpiryOptions* o) {
  for (size_t j = first; j < args.size(); ++j) {
    const std::string opt = Upper(args[j]);
    const bool has_next = j + 1 < args.size();
    const bool timed = o->expire.has_value();
    if (is_set && opt == "NX" && !o->xx) {
      o->nx = true;
    } else if (is_set && opt == "XX" && !o->nx) {
      o->xx = true;
    } else if (is_set && opt == "GET") {
      o->get = true;
    } else if (is_set && opt == "KEEPTTL" && !timed) {
      o->keep_ttl = true;
    } else if (!is_set && opt == "PERSIST" && !timed) {
      o->persist = true;
    } else if ((opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT") && !o->keep_ttl &&
               !o->persist && (!timed || o->expire->first == opt) && has_next) {
      o->expire = std::make_pair(opt, args[++j]);
    } else {
      return Err(kSyntax);
    }
  }
  return "";
}

std::string ParseTimed(const ExpiryOptions& o, const std::string& command, int64_t* at_ms) {
  const std::string& opt = o.expire->first;
  const Unit unit = (opt == "EX" || opt == "EXAT") ? Unit::kSeconds : Unit::kMillis;
  const bool absolute = opt == "EXAT" || opt == "PXAT";
  return ParsePositiveExpire(o.expire->second, unit, absolute, command, at_ms);
}

}  // namespace

bool ExpireCommands::SetTakesExpiry(const Args& args) {
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string opt = Upper(args[i]);
    if (opt == "EX" || opt == "PX" || opt == "EXAT" || opt == "PXAT" || opt == "KEEPTTL") {
      return true;
    }
  }
  return false;
}

void ExpireCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  if (name == "set") return Set(session, std::move(args), std::move(done));
  if (name == "setex" || name == "psetex") {
    int64_t at = 0;
    const Unit unit = name == "setex" ? Unit::kSeconds : Unit::kMillis;
    if (std::string e = ParsePositiveExpire(args[2], unit, false, name, &at); !e.empty()) {
      return done(e);
    }
    return Write(session, args[1], std::move(args[3]), static_cast<uint64_t>(at), false,
                 [done](std::string error) { done(error.empty() ? "+OK\r\n" : error); });
  }
  if (name == "getex") return GetEx(session, std::move(args), std::move(done));
  if (name == "ttl" || name == "pttl" || name == "expiretime" || name == "pexpiretime") {
    return Ttl(session, std::move(args), std::move(done));
  }
  if (name == "persist") return Persist(session, std::move(args), std::move(done));
  Expire(session, std::move(args), std::move(done));
}

namespace {

// A write's answer (any typed reply) as the "" or the error reply WriteDone takes.
auto WriteReply(std::function<void(std::string)> done) {
  return [done = std::move(done)](const auto& reply) {
    if (!reply.ok()) {
      // The key vanished between the read and the expiry write: nothing to expire.
      if (reply.status().code() == Status::Code::kNotFound) return done("");
      return done(ErrorReply(reply.status()));
    }
    done("");
  };
}

}  // namespace

void ExpireCommands::Read(const RedisSession& session, const std::string& key, ReadDone done) {
  c_->ops->Get(Options(session), net::GetRequest{0, key},
               [done = std::move(done)](StatusOr<net::GetResponse> reply) {
                 if (!reply.ok()) return done(ErrorReply(reply.status()), {});
                 Stored stored;
                 stored.found = reply->found;
                 if (stored.found) {
                   stored.value = std::move(reply->value);
                   stored.expires_at_ms = reply->expires_at_ms;
                 }
                 done("", std::move(stored));
               });
}

void ExpireCommands::Write(const RedisSession& session, const std::string& key, std::string value,
                           uint64_t expires_at_ms, bool keep_ttl, WriteDone done) {
  net::PutRequest put{0, key, std::move(value)};
  if (keep_ttl) {
    put.keep_ttl = true;
  } else if (expires_at_ms != 0) {
    const int64_t now = NowMs();
    if (static_cast<int64_t>(expires_at_ms) <= now) {
      return c_->ops->Delete(Options(session), net::DeleteRequest{0, key},
                             WriteReply(std::move(done)));
    }
    put.ttl_ms = expires_at_ms - static_cast<uint64_t>(now);
  }
  c_->ops->Put(Options(session), std::move(put), WriteReply(std::move(done)));
}

void ExpireCommands::SetExpiry(const RedisSession& session, const std::string& key,
                               uint64_t expires_at_ms, WriteDone done) {
  // The node deletes the key when expires_at_ms is already past.
  c_->ops->Expire(Options(session), net::ExpireRequest{0, key, expires_at_ms},
                  WriteReply(std::move(done)));
}

void ExpireCommands::Set(const RedisSession& session, Args args, ReplyDone done) {
  ExpiryOptions o;
  if (std::string e = ParseOptions(args, 3, true, &o); !e.empty()) return done(e);
  int64_t at = 0;
  if (o.expire) {
    if (std::string e = ParseTimed(o, "set", &at); !e.empty()) return done(e);
  }
  const resp::Protocol p = session.protocol();
  const RedisSession* s = &session;
  auto write = [this, s, p, o, at, key = args[1], value = args[2], done](Stored old) {
    auto answer = [p, o, old](bool wrote) {
      if (o.get) return old.found ? BulkReply(p, old.value) : NullReply(p);
      return wrote ? std::string("+OK\r\n") : NullReply(p);
    };
    if ((o.nx && old.found) || (o.xx && !old.found)) return done(answer(false));
    Write(*s, key, value, static_cast<uint64_t>(at), o.keep_ttl,
          [done, answer](std::string error) { done(error.empty() ? answer(true) : error); });
  };
  if (!o.nx && !o.xx && !o.get) return write(Stored{});
  // NX / XX / GET: read, then write if the condition held (not atomic: docs/redis.md).
  Read(session, args[1], [write, done](std::string error, Stored old) {
    if (!error.empty()) return done(error);
    write(std::move(old));
  });
}

void ExpireCommands::GetEx(const RedisSession& session, Args args, ReplyDone done) {
  ExpiryOptions o;
  if (std::string e = ParseOptions(args, 2, false, &o); !e.empty()) return done(e);
  int64_t at = 0;
  if (o.expire) {
    if (std::string e = ParseTimed(o, "getex", &at); !e.empty()) return done(e);
  }
  const resp::Protocol p = session.protocol();
  const RedisSession* s = &session;
  Read(session, args[1],
       [this, s, p, o, at, key = args[1], done](std::string error, Stored stored) {
         if (!error.empty()) return done(error);
         if (!stored.found) return done(NullReply(p));
         std::string reply = BulkReply(p, stored.value);
         if (!o.expire && !(o.persist && stored.expires_at_ms != 0)) return done(reply);
         // GETEX PERSIST on a key without expiry writes nothing, as in redis.
         SetExpiry(*s, key, o.expire ? static_cast<uint64_t>(at) : 0,
                   [done, reply](std::string e) { done(e.empty() ? reply : e); });
       });
}

void ExpireCommands::Expire(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  bool nx = false, xx = false, gt = false, lt = false;
  for (size_t j = 3; j < args.size(); ++j) {
    const std::string opt = Upper(args[j]);
    if (opt == "NX") {
      nx = true;
    } else if (opt == "XX") {
      xx = true;
    } else if (opt == "GT") {
      gt = true;
    } else if (opt == "LT") {
      lt = true;
    } else {
      return done(Err("Unsupported option " + args[j]));
    }
  }
  if (nx && (xx || gt || lt)) {
    return done(Err("NX and XX, GT or LT options at the same time are not compatible"));
  }
  if (gt && lt) return done(Err("GT and LT options at the same time are not compatible"));
  int64_t when = 0;
  if (!ParseInt(args[2], &when)) return done(Err(kNotInteger));
  if (name == "expire" || name == "expireat") {
    if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000) return done(InvalidExpire(name));
    when *= 1000;
  }
  if (name == "expire" || name == "pexpire") {
    const int64_t now = NowMs();
    if (when > LLONG_MAX - now) return done(InvalidExpire(name));
    when += now;
  }
  const RedisSession* s = &session;
  Read(session, args[1],
       [this, s, nx, xx, gt, lt, when, key = args[1], done](std::string error, Stored stored) {
         if (!error.empty()) return done(error);
         if (!stored.found) return done(Int(0));
         const bool has = stored.expires_at_ms != 0;
         const auto current = static_cast<int64_t>(stored.expires_at_ms);
         if ((nx && has) || (xx && !has) || (gt && (!has || when <= current)) ||
             (lt && has && when >= current)) {
           return done(Int(0));
         }
         // A time at or before now deletes the key (the node decides); 1 either way.
         const uint64_t at = when <= 0 ? 1 : static_cast<uint64_t>(when);
         SetExpiry(*s, key, at, [done](std::string e) { done(e.empty() ? Int(1) : e); });
       });
}

void ExpireCommands::Ttl(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  const bool ms = name == "pttl" || name == "pexpiretime";
  const bool absolute = name == "expiretime" || name == "pexpiretime";
  Read(session, args[1], [ms, absolute, done](std::string error, Stored stored) {
    if (!error.empty()) return done(error);
    if (!stored.found) return done(Int(-2));
    if (stored.expires_at_ms == 0) return done(Int(-1));
    int64_t t = static_cast<int64_t>(stored.expires_at_ms);
    if (!absolute) t = std::max<int64_t>(t - NowMs(), 0);
    done(Int(ms ? t : (t + 500) / 1000));
  });
}

void ExpireCommands::Persist(const RedisSession& session, Args args, ReplyDone done) {
  const RedisSession* s = &session;
  Read(session, args[1], [this, s, key = args[1], done](std::string error, Stored stored) {
    if (!error.empty()) return done(error);
    if (!stored.found || stored.expires_at_ms == 0) return done(Int(0));
    SetExpiry(*s, key, 0, [done](std::string e) { done(e.empty() ? Int(1) : e); });
  });
}

}  // namespace shardkv::redis
