// RedisServer: the node's Redis-protocol (RESP2/RESP3) listener (design.md "Redis front end").
//
// Each connection reads bytes into its RespParser, hands every complete command it has to
// RedisCommands as one batch (one batch at a time, so replies stay in order and pipelined GETs
// and SETs are squashed), and writes the replies. A malformed stream gets "-ERR Protocol
// error: ..." after the replies of the commands before it, and that connection closes; no other
// connection is affected. Reading pauses while a connection has too many parsed commands or
// unwritten reply bytes (a client pipelining without reading cannot grow memory forever).
//
// Stop() stops accepting, lets each connection finish the batch it is running and write its
// replies (up to stop_grace), then closes every connection and joins the I/O threads.
//
// Thread-safety: Start(), Stop(), bound_port() and counters() may be called from any thread;
// Stop() not from a command's callback.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "redis/command_context.h"
#include "resp/resp_parser.h"
#include "shardkv/status.h"

namespace shardkv::redis {

struct RedisServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0 picks a free port (bound_port())
  int io_threads = 1;
  resp::ParserLimits limits;
  size_t max_connections = 10000;
  // Parsed commands not yet run, and reply bytes not yet written, before reading pauses.
  size_t max_pending_commands = 16384;
  size_t max_pending_write_bytes = size_t{64} << 20;
  std::chrono::milliseconds stop_grace{std::chrono::seconds(5)};
};

class RedisServer {
 public:
  // `context.client_list` and `context.counters` are set by the server.
  RedisServer(RedisServerOptions options, CommandContext context);
  ~RedisServer();  // Stop()s
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  // Binds and listens; IOError naming host:port if it cannot. REQUIRES: called once.
  [[nodiscard]] Status Start();
  uint16_t bound_port() const;
  void Stop();
  const ServerCounters& counters() const;

  class Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace shardkv::redis
