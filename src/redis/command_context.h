// What the Redis command handlers share: the node's client operations (every data command runs
// the same KvService rows as a native client's request, typed and in process, with the same
// guards, limits and stats), the cluster view, the secret AUTH accepts, and the listener's
// counters.
//
// Thread-safety: the context is immutable once the server starts; the counters are atomics.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/operations.h"
#include "redis/cluster_view.h"

namespace shardkv::redis {

// The version of Redis whose commands and replies this front end follows (HELLO and INFO
// report it as the server version, as Kvrocks and Dragonfly do, since clients gate features
// on it).
inline constexpr char kRedisCompatVersion[] = "7.0.15";

struct ServerCounters {
  std::atomic<uint64_t> connections_received{0};
  std::atomic<uint64_t> connected_clients{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> commands_processed{0};
  std::atomic<uint64_t> protocol_errors{0};
};

using Args = std::vector<std::string>;
// A handler's reply: the RESP bytes of exactly one reply.
using ReplyDone = std::function<void(std::string)>;

struct CommandContext {
  net::ClientOperations* ops = nullptr;  // REQUIRED
  std::shared_ptr<ClusterView> view;     // REQUIRED
  uint32_t self_id = 0;
  // This node's Redis address as clients dial it (host:port). RedisServer::Start sets it from
  // the host given here (empty: the bound host) and the bound port.
  std::string redis_address;
  // The secret AUTH accepts: the client secret, else the cluster secret. Empty: no
  // authentication (AUTH answers as redis-server without a password).
  std::string auth_secret;
  // CLIENT LIST: one line per open connection (may be empty: this connection only).
  std::function<std::vector<std::string>()> client_list;
  ServerCounters* counters = nullptr;  // may be null in tests
  // FLUSHDB / FLUSHALL (a cluster-wide wipe) run only when set (NodeOptions::redis_allow_flush).
  bool allow_flush = false;
};

}  // namespace shardkv::redis
