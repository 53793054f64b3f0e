#include "redis/key_commands.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <limits>
#include <optional>

#include "redis/ascii_case.h"
#include "resp/resp_writer.h"
#include "storage/counter_value.h"

namespace shardkv::redis {

std::string Line(resp::Protocol p, const std::function<void(resp::RespWriter&)>& write) {
  std::string out;
  resp::RespWriter w(&out, p);
  write(w);
  return out;
}

std::string Err(std::string_view message) {
  std::string out;
  resp::RespWriter(&out, resp::Protocol::kResp2).Error(message);
  return out;
}

std::string IntegerReply(uint64_t n) { return ":" + std::to_string(n) + "\r\n"; }

net::OpOptions Options(const RedisSession& session) {
  net::OpOptions options;
  options.consistency = session.consistency();
  return options;
}

bool ParseInt(const std::string& text, int64_t* out) {
  // One implementation of Redis's string2ll: a counter's stored value is parsed by it too.
  std::optional<int64_t> v = storage::ParseCounterInteger(text);
  if (!v) return false;
  *out = *v;
  return true;
}

std::string_view RedisErrorPrefix(Status::Reason reason) {
  switch (reason) {
    // A node or a side that cannot serve (unformed, starting, no majority) is Redis Cluster's
    // CLUSTERDOWN: clients retry later or elsewhere.
    case Status::Reason::kUnformed:
    case Status::Reason::kStarting:
    case Status::Reason::kNoMajority:
      return "CLUSTERDOWN";
    // A leader change in progress: Redis's TRYAGAIN (retry the same command shortly).
    case Status::Reason::kNotLeader:
      return "TRYAGAIN";
    case Status::Reason::kWrongType:
      return "WRONGTYPE";
    case Status::Reason::kNone:
    case Status::Reason::kNotApplied:
    case Status::Reason::kOutcomeUnknown:
    case Status::Reason::kSuperseded:
    case Status::Reason::kLate:
    case Status::Reason::kLostInFlight:
    case Status::Reason::kQuorumMissed:
    case Status::Reason::kWrongCluster:
    case Status::Reason::kRefusedByPolicy:
    case Status::Reason::kClockRejected:
    case Status::Reason::kUnexpectedEpoch:
    case Status::Reason::kUnreachable:
    case Status::Reason::kNeedsRebuild:
    case Status::Reason::kCount:
      break;
  }
  return "ERR";
}

std::string ErrorReply(const Status& status) {
  return Err("-" + std::string(RedisErrorPrefix(status.reason())) + " " + status.message());
}

void KeyCommands::Read(const RedisSession& session, std::vector<std::string> keys,
                       std::function<void(std::string, std::vector<std::optional<std::string>>,
                                          std::vector<net::ValueKind>)>
                           done) {
  net::MultiGetRequest request;
  request.keys.reserve(keys.size());
  for (auto& key : keys) request.keys.push_back(net::GetRequest{0, std::move(key)});
  c_->ops->MultiGet(Options(session), std::move(request),
                    [done = std::move(done)](StatusOr<net::MultiGetResponse> reply) {
                      if (!reply.ok()) return done(ErrorReply(reply.status()), {}, {});
                      std::vector<std::optional<std::string>> values;
                      std::vector<net::ValueKind> kinds;
                      values.reserve(reply->results.size());
                      for (net::ItemResult& item : reply->results) {
                        if (!item.status.ok()) return done(ErrorReply(item.status), {}, {});
                        values.push_back(item.found
                                             ? std::optional<std::string>(std::move(item.value))
                                             : std::nullopt);
                        kinds.push_back(item.found ? item.kind : net::ValueKind::kString);
                      }
                      done("", std::move(values), std::move(kinds));
                    });
}

void KeyCommands::GetBatch(const RedisSession& session, std::vector<std::string> keys,
                           std::function<void(std::vector<std::string>)> done) {
  const size_t n = keys.size();
  const resp::Protocol p = session.protocol();
  net::MultiGetRequest request;
  request.keys.reserve(n);
  for (auto& key : keys) request.keys.push_back(net::GetRequest{0, std::move(key)});
  c_->ops->MultiGet(Options(session), std::move(request),
                    [n, p, done = std::move(done)](StatusOr<net::MultiGetResponse> reply) {
                      std::vector<std::string> replies(n);
                      for (size_t i = 0; i < n; ++i) {
                        if (!reply.ok() || i >= reply->results.size()) {
                          replies[i] = !reply.ok() ? ErrorReply(reply.status())
                                                   : Err("unexpected reply from the node");
                          continue;
                        }
                        net::ItemResult& item = reply->results[i];
                        if (!item.status.ok()) {
                          replies[i] = ErrorReply(item.status);
                        } else if (item.found && item.kind != net::ValueKind::kString) {
                          replies[i] = ErrorReply(net::WrongTypeError());
                        } else if (item.found) {
                          replies[i] = Line(p, [&](resp::RespWriter& w) { w.Bulk(item.value); });
                        } else {
                          replies[i] = Line(p, [](resp::RespWriter& w) { w.Null(); });
                        }
                      }
                      done(std::move(replies));
                    });
}

void KeyCommands::SetBatch(const RedisSession& session,
                           std::vector<std::pair<std::string, std::string>> kv,
                           std::function<void(std::vector<std::string>)> done) {
  const size_t n = kv.size();
  net::MultiPutRequest request;
  request.items.reserve(n);
  for (auto& [key, value] : kv) {
    request.items.push_back(net::PutRequest{0, std::move(key), std::move(value)});
  }
  c_->ops->MultiPut(Options(session), std::move(request),
                    [n, done = std::move(done)](StatusOr<net::MultiPutResponse> reply) {
                      std::vector<std::string> replies(n);
                      for (size_t i = 0; i < n; ++i) {
                        if (!reply.ok() || i >= reply->results.size()) {
                          replies[i] = !reply.ok() ? ErrorReply(reply.status())
                                                   : Err("unexpected reply from the node");
                        } else if (!reply->results[i].status.ok()) {
                          replies[i] = ErrorReply(reply->results[i].status);
                        } else {
                          replies[i] = "+OK\r\n";
                        }
                      }
                      done(std::move(replies));
                    });
}

void KeyCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  const resp::Protocol p = session.protocol();
  if (name == "get") {
    return GetBatch(session, {args[1]}, [done](std::vector<std::string> r) { done(r[0]); });
  }
  if (name == "set") return Set(session, std::move(args), std::move(done));
  if (name == "del" || name == "unlink") return Delete(session, std::move(args), std::move(done));
  if (name == "mset") {
    if (args.size() % 2 != 1) return done(Err("wrong number of arguments for 'mset' command"));
    std::vector<std::pair<std::string, std::string>> kv;
    kv.reserve(args.size() / 2);
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      kv.emplace_back(std::move(args[i]), std::move(args[i + 1]));
    }
    return SetBatch(session, std::move(kv), [done](std::vector<std::string> replies) {
      // MSET has one reply: the first failure, else OK (it is not atomic: docs/redis.md).
      for (const std::string& r : replies) {
        if (r[0] == '-') return done(r);
      }
      done("+OK\r\n");
    });
  }
  // The rest read first: MGET, EXISTS, STRLEN, GETRANGE, TYPE.
  int64_t start = 0, end = 0;
  if (name == "getrange" && (!ParseInt(args[2], &start) || !ParseInt(args[3], &end))) {
    return done(Err(kNotInteger));
  }
  std::vector<std::string> keys(args.begin() + 1, args.end());
  if (name == "strlen" || name == "getrange" || name == "type") keys.resize(1);
  Read(
      session, std::move(keys),
      [name, p, start, end, done](std::string error, std::vector<std::optional<std::string>> values,
                                  std::vector<net::ValueKind> kinds) mutable {
        if (!error.empty()) return done(error);
        if (name == "mget") {
          // As Redis: a key of another type reads as nil in MGET.
          return done(Line(p, [&](resp::RespWriter& w) {
            w.ArrayHeader(values.size());
            for (size_t i = 0; i < values.size(); ++i) {
              values[i] && kinds[i] == net::ValueKind::kString ? w.Bulk(*values[i]) : w.Null();
            }
          }));
        }
        if (name == "exists") {
          const auto found = std::count_if(values.begin(), values.end(),
                                           [](const auto& v) { return v.has_value(); });
          return done(":" + std::to_string(found) + "\r\n");
        }
        if (name == "type") {
          if (!values[0]) return done("+none\r\n");
          switch (kinds[0]) {
            case net::ValueKind::kHash:
              return done("+hash\r\n");
            case net::ValueKind::kSet:
              return done("+set\r\n");
            case net::ValueKind::kString:
              break;
          }
          return done("+string\r\n");
        }
        if (kinds[0] != net::ValueKind::kString) return done(ErrorReply(net::WrongTypeError()));
        if (name == "strlen")
          return done(":" + std::to_string(values[0] ? values[0]->size() : 0) + "\r\n");
        // GETRANGE, with redis's clamping (getrangeCommand).
        const std::string value = values[0].value_or("");
        const auto len = static_cast<int64_t>(value.size());
        if (start < 0 && end < 0 && start > end) return done("$0\r\n\r\n");
        if (start < 0) start = len + start;
        if (end < 0) end = len + end;
        if (start < 0) start = 0;
        if (end < 0) end = 0;
        if (end >= len) end = len - 1;
        if (start > end || len == 0) return done("$0\r\n\r\n");
        done(Line(p, [&](resp::RespWriter& w) {
          w.Bulk(std::string_view(value).substr(static_cast<size_t>(start),
                                                static_cast<size_t>(end - start + 1)));
        }));
      });
}

void KeyCommands::Set(const RedisSession& session, Args args, ReplyDone done) {
  // A SET with an expiry option (EX, PX, EXAT, PXAT, KEEPTTL) never gets here: the dispatcher
  // sends it to ExpireCommands::Set, which writes the expiry register too.
  bool nx = false, xx = false, get = false;
  for (size_t i = 3; i < args.size(); ++i) {
    const std::string opt = Upper(args[i]);
    if (opt == "NX" && !xx) {
      nx = true;
    } else if (opt == "XX" && !nx) {
      xx = true;
    } else if (opt == "GET") {
      get = true;
    } else {
      return done(Err(kSyntax));
    }
  }
  if (!nx && !xx && !get) {
    return SetBatch(session, {{args[1], args[2]}},
                    [done](std::vector<std::string> r) { done(r[0]); });
  }
  // NX / XX / GET: read, then write if the condition held. Not atomic (docs/redis.md: SET NX is not
  // a lock): another coordinator may write the key between the two steps.
  const resp::Protocol p = session.protocol();
  const RedisSession* s = &session;
  Read(session, {args[1]},
       [this, s, p, nx, xx, get, key = args[1], value = args[2], done](
           std::string error, std::vector<std::optional<std::string>> values,
           std::vector<net::ValueKind> kinds) {
         if (!error.empty()) return done(error);
         // SET ... GET of a hash or set is Redis's WRONGTYPE (a plain SET overwrites any type).
         if (get && kinds[0] != net::ValueKind::kString) {
           return done(ErrorReply(net::WrongTypeError()));
         }
         const std::optional<std::string> old = values[0];
         auto answer = [p, get, old](bool wrote) {
           if (get) return Line(p, [&](resp::RespWriter& w) { old ? w.Bulk(*old) : w.Null(); });
           return wrote ? std::string("+OK\r\n") : Line(p, [](resp::RespWriter& w) { w.Null(); });
         };
         if ((nx && old) || (xx && !old)) return done(answer(false));
         SetBatch(*s, {{key, value}}, [done, answer](std::vector<std::string> r) {
           done(r[0][0] == '-' ? r[0] : answer(true));
         });
       });
}

void KeyCommands::Delete(const RedisSession& session, Args args, ReplyDone done) {
  std::vector<std::string> keys(args.begin() + 1, args.end());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());  // DEL k k counts k once
  const RedisSession* s = &session;
  Read(session, keys,
       [this, s, keys, done](std::string error, std::vector<std::optional<std::string>> values,
                             std::vector<net::ValueKind>) {
         if (!error.empty()) return done(error);
         std::vector<std::string> found;
         for (size_t i = 0; i < keys.size(); ++i) {
           if (values[i]) found.push_back(keys[i]);
         }
         if (found.empty()) return done(":0\r\n");
         struct Pending {
           std::atomic<size_t> left;
           common::Mutex mu;
           std::string error;
         };
         auto pending = std::make_shared<Pending>();
         pending->left = found.size();
         const size_t count = found.size();
         for (std::string& key : found) {
           c_->ops->Delete(Options(*s), net::DeleteRequest{0, std::move(key)},
                           [pending, count, done](StatusOr<net::DeleteResponse> reply) {
                             if (!reply.ok()) {
                               common::MutexLock lock(&pending->mu);
                               if (pending->error.empty())
                                 pending->error = ErrorReply(reply.status());
                             }
                             if (pending->left.fetch_sub(1) != 1) return;
                             common::MutexLock lock(&pending->mu);
                             done(pending->error.empty() ? ":" + std::to_string(count) + "\r\n"
                                                         : pending->error);
                           });
         }
       });
}

}  // namespace shardkv::redis
