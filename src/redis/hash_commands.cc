#include "redis/hash_commands.h"

#include <string>
#include <utility>
#include <vector>

#include "common/glob.h"
#include "redis/ascii_case.h"
#include "redis/key_commands.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

const net::HashFieldValue* Find(const std::vector<net::HashFieldValue>& fields,
                                const std::string& name) {
  for (const net::HashFieldValue& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

Status ParseCollectionScan(const Args& args, std::string* match) {
  int64_t cursor = 0;
  if (!ParseInt(args[2], &cursor) || cursor < 0) return Status::InvalidArgument("invalid cursor");
  for (size_t i = 3; i < args.size(); i += 2) {
    const std::string opt = Lower(args[i]);
    int64_t count = 0;
    if (i + 1 >= args.size()) return Status::InvalidArgument("syntax error");
    if (opt == "match") {
      *match = args[i + 1];
    } else if (opt == "count") {
      if (!ParseInt(args[i + 1], &count)) {
        return Status::InvalidArgument("value is not an integer or out of range");
      }
      if (count < 1) return Status::InvalidArgument("syntax error");
    } else {
      return Status::InvalidArgument("syntax error");
    }
  }
  return Status::OK();
}

void HashCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  if (name == "hset" || name == "hmset" || name == "hsetnx" || name == "hdel") {
    return Write(session, std::move(args), std::move(done));
  }
  Read(session, std::move(args), std::move(done));
}

void HashCommands::Write(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  net::HashWriteRequest request;
  request.key = args[1];
  if (name == "hdel") {
    request.remove.assign(args.begin() + 2, args.end());
  } else {
    // HSET and HMSET take field value pairs (their arity says at least one).
    if (args.size() % 2 != 0) {
      return done(ErrorReply(
          Status::InvalidArgument("wrong number of arguments for '" + name + "' command")));
    }
    for (size_t i = 2; i + 1 < args.size(); i += 2) {
      request.set.push_back({std::move(args[i]), std::move(args[i + 1])});
    }
    request.only_new = name == "hsetnx";
  }
  net::OpOptions options;
  options.consistency = session.consistency();
  c_->ops->HashWrite(options, std::move(request),
                     [name, done = std::move(done)](StatusOr<net::HashWriteResponse> r) {
                       if (!r.ok()) return done(ErrorReply(r.status()));
                       if (name == "hmset") return done("+OK\r\n");
                       done(IntegerReply(r->changed));
                     });
}

void HashCommands::Read(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  // HSCAN's arguments are checked before the read, as Redis does.
  std::string match;
  if (name == "hscan") {
    if (Status s = ParseCollectionScan(args, &match); !s.ok()) return done(ErrorReply(s));
  }
  net::OpOptions options;
  options.consistency = session.consistency();
  const resp::Protocol p = session.protocol();
  net::HashReadRequest request{0, args[1]};  // before `args` moves into the callback
  c_->ops->HashRead(
      options, std::move(request),
      [name, p, args = std::move(args), match = std::move(match),
       done = std::move(done)](StatusOr<net::HashReadResponse> r) {
        if (!r.ok()) return done(ErrorReply(r.status()));
        const std::vector<net::HashFieldValue>& fields = r->fields;  // empty when missing
        if (name == "hget") {
          const net::HashFieldValue* f = Find(fields, args[2]);
          return done(Line(p, [&](resp::RespWriter& w) { f ? w.Bulk(f->value) : w.Null(); }));
        }
        if (name == "hmget") {
          return done(Line(p, [&](resp::RespWriter& w) {
            w.ArrayHeader(args.size() - 2);
            for (size_t i = 2; i < args.size(); ++i) {
              const net::HashFieldValue* f = Find(fields, args[i]);
              f ? w.Bulk(f->value) : w.Null();
            }
          }));
        }
        if (name == "hexists") return done(IntegerReply(Find(fields, args[2]) ? 1 : 0));
        if (name == "hstrlen") {
          const net::HashFieldValue* f = Find(fields, args[2]);
          return done(IntegerReply(f ? f->value.size() : 0));
        }
        if (name == "hlen") return done(IntegerReply(fields.size()));
        if (name == "hgetall") {
          return done(Line(p, [&](resp::RespWriter& w) {
            w.MapHeader(fields.size());
            for (const net::HashFieldValue& f : fields) {
              w.Bulk(f.name);
              w.Bulk(f.value);
            }
          }));
        }
        if (name == "hkeys" || name == "hvals") {
          return done(Line(p, [&](resp::RespWriter& w) {
            w.ArrayHeader(fields.size());
            for (const net::HashFieldValue& f : fields) w.Bulk(name == "hkeys" ? f.name : f.value);
          }));
        }
        // HSCAN: the whole hash in one reply with cursor 0, as Redis answers for a small hash
        // (a scan's guarantees hold: every field present throughout is returned, once).
        std::vector<const net::HashFieldValue*> picked;
        for (const net::HashFieldValue& f : fields) {
          if (match.empty() || common::GlobMatch(match, f.name)) picked.push_back(&f);
        }
        done(Line(p, [&](resp::RespWriter& w) {
          w.ArrayHeader(2);
          w.Bulk("0");
          w.ArrayHeader(picked.size() * 2);
          for (const net::HashFieldValue* f : picked) {
            w.Bulk(f->name);
            w.Bulk(f->value);
          }
        }));
      });
}

}  // namespace shardkv::redis
