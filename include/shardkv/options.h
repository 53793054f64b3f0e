// Options for the two things an application starts: a Node (embedded server) or a Client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv {

// Per-request consistency, as in Cassandra: how many replicas must answer.
enum class Consistency : uint8_t {
  kDefault = 0,  // the cluster's configured W (writes) / Q (reads): a quorum unless changed
  kOne,
  kQuorum,
  kAll,
};
StatusOr<Consistency> ParseConsistency(std::string_view name);  // "one", "quorum", "all"
std::string_view ConsistencyName(Consistency c);

struct NodeOptions {
  uint32_t id = 1;  // unique and stable within a cluster; never reuse one for a new node
  // host:port to listen on. Port 0 picks a free port; the bound port is Node::port() and is
  // also written to <data_dir>/port so launchers and tests never race for ports.
  std::string listen = "127.0.0.1:0";
  std::string data_dir;  // REQUIRED
  int io_threads = 2;
  bool sync = false;  // fsync the WAL before acknowledging each write (survives power loss)

  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{16} << 20;
  size_t max_frame_bytes = size_t{64} << 20;
  uint64_t tombstone_grace_ms = uint64_t{10} * 24 * 3600 * 1000;  // Cassandra's gc_grace
  uint64_t max_clock_offset_ms = 500;
  size_t block_cache_bytes = size_t{64} << 20;
  // Other nodes to contact at start (host:port), for joining or fetching the newest map.
  std::vector<std::string> seeds;
  // Rebuild (design.md "Replication": a node down longer than tombstone_grace must not rejoin
  // with its data): drop every local key, fetch the cluster map from `seeds`, re-stream every
  // range this node holds from the other replicas, and only then serve. REQUIRES: seeds.
  bool rebuild = false;
};

struct ClientOptions {
  std::vector<std::string> seeds;  // host:port of one or more nodes; REQUIRED
  // The cluster this client may talk to. A node whose map has another cluster id is refused:
  // never routed to, its map never adopted (a stopped cluster's ports may be taken by another
  // one). 0 = adopt the id of the first node that answers, then refuse any other id for the
  // rest of the client's life. Every request carries the id, and nodes refuse a foreign one.
  uint64_t cluster_id = 0;
  // How wrong-cluster errors explain where the expected id came from, e.g. "the cluster in
  // /d": "127.0.0.1:7000 belongs to cluster B, not cluster A (the cluster in /d)". Optional.
  std::string cluster_id_source;
  // Per operation: every attempt, retry and backoff fits within this.
  uint32_t timeout_ms = 5000;
  // A failed request is retried at most this many times (transient errors only).
  int max_retries = 3;
  Consistency consistency = Consistency::kDefault;
  // Network I/O threads inside the client.
  int io_threads = 1;
  // TCP connections to each node; requests are spread over them. One pipelines well; load
  // generators use more to look like many clients.
  int connections_per_node = 1;
};

}  // namespace shardkv
