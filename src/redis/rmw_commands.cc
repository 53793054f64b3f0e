#include "redis/rmw_commands.h"

#include <optional>
#include <utility>
#include <vector>

#include "redis/ascii_case.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

std::string BulkOrNull(resp::Protocol p, const std::optional<std::string>& v) {
  std::string out;
  resp::RespWriter w(&out, p);
  v ? w.Bulk(*v) : w.Null();
  return out;
}

}  // namespace

void RmwCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  const resp::Protocol p = session.protocol();
  const RedisSession* s = &session;
  KeyCommands* keys = keys_;
  if (name == "msetnx" && args.size() % 2 != 1) {
    return done(Err("wrong number of arguments for 'msetnx' command"));
  }
  std::vector<std::string> read;
  std::vector<std::pair<std::string, std::string>> writes;
  if (name == "msetnx") {
    for (size_t i = 1; i + 1 < args.size(); i += 2) {
      read.push_back(args[i]);
      writes.emplace_back(args[i], args[i + 1]);
    }
  } else {
    read.push_back(args[1]);
    if (name != "getdel") writes.emplace_back(args[1], args[2]);
  }
  // Read, then write: see the header for what a concurrent writer can do in between.
  keys->Read(session, std::move(read),
             [this, s, p, keys, name, key = args[1], writes = std::move(writes), done](
                 std::string error, std::vector<std::optional<std::string>> values,
                 std::vector<net::ValueKind> kinds) mutable {
               if (!error.empty()) return done(error);
               // GETSET and GETDEL of a hash or set are Redis's WRONGTYPE (SETNX and MSETNX only
               // look).
               if ((name == "getset" || name == "getdel") && kinds[0] != net::ValueKind::kString) {
                 return done(ErrorReply(net::WrongTypeError()));
               }
               const std::optional<std::string> old = values[0];
               if (name == "getdel") {
                 if (!old) return done(BulkOrNull(p, old));
                 net::OpOptions options;
                 options.consistency = s->consistency();
                 c_->ops->Delete(options, net::DeleteRequest{0, std::move(key)},
                                 [p, old, done](StatusOr<net::DeleteResponse> r) {
                                   if (!r.ok()) return done(ErrorReply(r.status()));
                                   done(BulkOrNull(p, old));
                                 });
                 return;
               }
               bool any = false;
               for (const auto& v : values) any = any || v.has_value();
               if ((name == "setnx" || name == "msetnx") && any) return done(":0\r\n");
               keys->SetBatch(*s, std::move(writes),
                              [name, p, old, done](std::vector<std::string> replies) {
                                for (const std::string& r : replies) {
                                  if (r[0] == '-') return done(r);
                                }
                                if (name == "getset") return done(BulkOrNull(p, old));
                                done(":1\r\n");
                              });
             });
}

}  // namespace shardkv::redis
