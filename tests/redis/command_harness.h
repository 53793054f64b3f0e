// CommandHarness: RedisCommands over a fake backend that answers synchronously, for the command
// tests (redis_commands_test, expire_commands_test, scan_commands_test). `Handler` is the
// backend: FakeHandler, or a test's own with more state (expiry times, say).
#pragma once

#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "redis/fake_backend.h"
#include "redis/redis_commands.h"

namespace shardkv::redis::testing {

struct HarnessOptions {
  std::string secret;        // non-empty: AUTH required, with this secret
  bool allow_flush = false;  // FLUSHDB/FLUSHALL allowed ([redis] allow_flush)
};

template <typename Handler = FakeHandler>
struct CommandHarness {
  explicit CommandHarness(HarnessOptions options = {}) {
    context.ops = &ops;
    context.view = std::make_shared<FakeView>();
    context.self_id = 1;
    context.redis_address = "127.0.0.1:6379";
    context.auth_secret = options.secret;
    context.allow_flush = options.allow_flush;
    commands = std::make_unique<RedisCommands>(&context);
    session = std::make_shared<RedisSession>(7, "127.0.0.1:5000", "127.0.0.1:6379",
                                             !options.secret.empty());
  }

  // Runs the commands as one pipelined batch; `closed` says whether the connection would close.
  std::string Run(std::vector<Args> cmds, bool* closed = nullptr) {
    std::string replies;
    bool close = false;
    bool ran = false;
    commands->Run(session, std::move(cmds), [&](std::string out, bool c) {
      replies = std::move(out);
      close = c;
      ran = true;
    });
    REQUIRE(ran);
    if (closed != nullptr) *closed = close;
    return replies;
  }
  std::string One(Args args) { return Run({std::move(args)}); }
  // The value of an integer reply (":N\r\n"); fails the test on any other reply.
  int64_t IntReply(Args args) {
    const std::string r = One(std::move(args));
    INFO(r);
    REQUIRE(r.size() > 3);
    REQUIRE(r[0] == ':');
    return std::stoll(r.substr(1));
  }

  Handler handler;
  HandlerOps ops{&handler};
  CommandContext context;
  std::unique_ptr<RedisCommands> commands;
  std::shared_ptr<RedisSession> session;
};

}  // namespace shardkv::redis::testing
