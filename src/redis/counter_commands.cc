#include "redis/counter_commands.h"

#include <limits>
#include <string>
#include <utility>

#include "redis/ascii_case.h"
#include "redis/key_commands.h"

namespace shardkv::redis {
void CounterCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  int64_t delta = 1;
  if (name == "incrby" || name == "decrby") {
    // Redis's own parse of the amount (string2ll) and its messages.
    int64_t amount = 0;
    if (!ParseInt(args[2], &amount)) {
      return done(ErrorReply(Status::InvalidArgument("value is not an integer or out of range")));
    }
    if (name == "decrby" && amount == std::numeric_limits<int64_t>::min()) {
      return done(ErrorReply(Status::InvalidArgument("decrement would overflow")));
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
