#include "redis/counter_commands.h"

#include <limits>
#include <string>
#include <utility>

#include "redis/ascii_case.h"
#include "redis/key_commands.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

std::string Err(std::string_view message) {
  std::string out;
  resp::RespWriter(&out, resp::Protocol::kResp2).Error(message);
  return out;
}

}  // namespace

void CounterCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  int64_t delta = 1;
  if (name == "incrby" || name == "decrby") {
    // Redis's own parse of the amount (string2ll) and its messages.
    int64_t amount = 0;
    if (!ParseInt(args[2], &amount)) return done(Err("value is not an integer or out of range"));
    if (name == "decrby" && amount == std::numeric_limits<int64_t>::min()) {
      return done(Err("decrement would overflow"));
    }
    delta = name == "decrby" ? -amount : amount;
  } else if (name == "decr") {
    delta = -1;
  }
  net::OpOptions options;
  options.consistency = session.consistency();
  c_->ops->Incr(options, net::IncrRequest{0, args[1], delta},
                [done = std::move(done)](StatusOr<net::IncrResponse> r) {
                  if (!r.ok()) return done(ErrorReply(r.status()));
                  done(":" + std::to_string(r->value) + "\r\n");
                });
}

}  // namespace shardkv::redis
