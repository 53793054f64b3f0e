#include "redis/set_commands.h"

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "common/glob.h"
#include "redis/ascii_case.h"
#include "redis/hash_commands.h"
#include "redis/key_commands.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

bool Has(const std::vector<std::string>& members, const std::string& m) {
  return std::binary_search(members.begin(), members.end(), m);
}

// SRANDMEMBER's picks: with count >= 0, up to count distinct members; with count < 0, -count
// members that may repeat (Redis's rules; the order is not Redis's, which no client relies on).
std::vector<const std::string*> RandomMembers(const std::vector<std::string>& members,
                                              int64_t count) {
  std::vector<const std::string*> out;
  if (members.empty() || count == 0) return out;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  if (count < 0) {
    // -count is at most 2^63 (ParseInt refuses LLONG_MIN below), bounded by the caller.
    std::uniform_int_distribution<size_t> pick(0, members.size() - 1);
    for (int64_t i = 0; i < -count; ++i) out.push_back(&members[pick(rng)]);
    return out;
  }
  for (const std::string& m : members) out.push_back(&m);
  std::shuffle(out.begin(), out.end(), rng);
  if (static_cast<uint64_t>(count) < out.size()) out.resize(static_cast<size_t>(count));
  return out;
}

// The most members a negative SRANDMEMBER count may ask for: every one is a bulk string in one
// reply, so an absurd count must not build an absurd reply.
constexpr int64_t kMaxRandomRepeats = int64_t{1} << 20;

}  // namespace

void SetCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  if (name == "sadd" || name == "srem") return Write(session, std::move(args), std::move(done));
  Read(session, std::move(args), std::move(done));
}

void SetCommands::Write(const RedisSession& session, Args args, ReplyDone done) {
  net::SetWriteRequest request;
  request.key = args[1];
  std::vector<std::string>& members = Lower(args[0]) == "sadd" ? request.add : request.remove;
  members.assign(std::make_move_iterator(args.begin() + 2), std::make_move_iterator(args.end()));
  net::OpOptions options;
  options.consistency = session.consistency();
  c_->ops->SetWrite(options, std::move(request),
                    [done = std::move(done)](StatusOr<net::SetWriteResponse> r) {
                      if (!r.ok()) return done(ErrorReply(r.status()));
                      done(IntegerReply(r->changed));
                    });
}

void SetCommands::Read(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  // Arguments are checked before the read, as Redis does.
  std::string match;
  int64_t count = 1;
  const bool with_count = name == "srandmember" && args.size() > 2;
  if (name == "sscan") {
    if (Status s = ParseCollectionScan(args, &match); !s.ok()) return done(ErrorReply(s));
  } else if (name == "srandmember") {
    if (args.size() > 3) return done(ErrorReply(Status::InvalidArgument("syntax error")));
    if (with_count && !ParseInt(args[2], &count)) {
      return done(ErrorReply(Status::InvalidArgument("value is not an integer or out of range")));
    }
    if (count < -kMaxRandomRepeats) {
      return done(ErrorReply(Status::InvalidArgument("value is out of range")));
    }
  }
  net::OpOptions options;
  options.consistency = session.consistency();
  const resp::Protocol p = session.protocol();
  net::SetReadRequest request{0, args[1]};  // before `args` moves into the callback
  c_->ops->SetRead(options, std::move(request),
                   [name, p, args = std::move(args), match = std::move(match), count, with_count,
                    done = std::move(done)](StatusOr<net::SetReadResponse> r) {
                     if (!r.ok()) return done(ErrorReply(r.status()));
                     const std::vector<std::string>& members =
                         r->members;  // ascending; empty when missing
                     if (name == "sismember")
                       return done(IntegerReply(Has(members, args[2]) ? 1 : 0));
                     if (name == "smismember") {
                       return done(Line(p, [&](resp::RespWriter& w) {
                         w.ArrayHeader(args.size() - 2);
                         for (size_t i = 2; i < args.size(); ++i)
                           w.Integer(Has(members, args[i]) ? 1 : 0);
                       }));
                     }
                     if (name == "scard") return done(IntegerReply(members.size()));
                     if (name == "smembers") {
                       return done(Line(p, [&](resp::RespWriter& w) {
                         w.SetHeader(members.size());
                         for (const std::string& m : members) w.Bulk(m);
                       }));
                     }
                     if (name == "srandmember") {
                       const std::vector<const std::string*> picked = RandomMembers(members, count);
                       return done(Line(p, [&](resp::RespWriter& w) {
                         if (!with_count) {
                           picked.empty() ? w.Null() : w.Bulk(*picked[0]);
                           return;
                         }
                         w.ArrayHeader(picked.size());
                         for (const std::string* m : picked) w.Bulk(*m);
                       }));
                     }
                     // SSCAN: the whole set in one reply with cursor 0, as Redis answers for a
                     // small set.
                     std::vector<const std::string*> picked;
                     for (const std::string& m : members) {
                       if (match.empty() || common::GlobMatch(match, m)) picked.push_back(&m);
                     }
                     done(Line(p, [&](resp::RespWriter& w) {
                       w.ArrayHeader(2);
                       w.Bulk("0");
                       w.ArrayHeader(picked.size());
                       for (const std::string* m : picked) w.Bulk(*m);
                     }));
                   });
}

}  // namespace shardkv::redis
