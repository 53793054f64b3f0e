// Options for the two things an application starts: a Node (embedded server) or a Client.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
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

// The ranges NodeOptions (and shardkv-node's flags) accept; Node::Start refuses anything else
// with InvalidArgument before it touches the data directory.
inline constexpr uint32_t kMaxNodeId = uint32_t{1} << 30;
inline constexpr int kMaxIoThreads = 64;
inline constexpr size_t kMaxKeyBytesLimit = size_t{1} << 20;     // 1 MiB
inline constexpr size_t kMaxValueBytesLimit = size_t{32} << 20;  // 32 MiB: fits in a 64 MiB frame
inline constexpr uint64_t kMaxTombstoneGraceSeconds = uint64_t{1}
                                                      << 40;  // the CLI passes up to this
// Background anti-entropy's period: at least a second (a short tombstone grace would otherwise
// compare every range many times a second), at most a year.
inline constexpr uint64_t kMinRepairPeriodMs = 1000;
inline constexpr uint64_t kMaxRepairPeriodMs = uint64_t{365} * 24 * 3600 * 1000;
inline constexpr uint64_t kMaxRepairRate = uint64_t{1} << 32;  // keys a second
// Room in a frame for everything but the key and value (header, epoch, ids, timestamps).
inline constexpr size_t kFrameOverheadBytes = size_t{64} << 10;

struct NodeOptions {
  uint32_t id = 1;  // unique and stable within a cluster; never reuse one for a new node
  // The cluster this node belongs to (0 = not known: a new node, or an embedded standalone one).
  // When set, the node refuses to start on a data directory without a database (its data was
  // lost: it must be rebuilt, not serve empty) or whose map is of another cluster, a rebuild
  // accepts only maps of this cluster, and the node refuses adoption into another cluster.
  uint64_t cluster_id = 0;
  // host:port to listen on. Port 0 picks a free port; the bound port is Node::port() and is
  // also written to <data_dir>/port so launchers and tests never race for ports.
  std::string listen = "127.0.0.1:0";
  // host:port other nodes and clients use to reach this node (what the cluster map records),
  // when it differs from `listen` (0.0.0.0, containers, NAT). Empty: the bound address.
  std::string advertise;
  std::string data_dir;  // REQUIRED
  // host:port of the Redis-protocol (RESP2/RESP3) listener; empty: none. Port 0 picks a free
  // port, written to <data_dir>/redis_port. Any node serves any key (docs/redis.md); with a
  // secret, a connection must AUTH with the client secret (else the cluster's).
  std::string redis_listen;
  // Lets the Redis listener run FLUSHDB / FLUSHALL: a wipe of every key of the whole cluster
  // (`cluster up` sets it for local clusters). Off: both are refused with the reason.
  bool redis_allow_flush = false;
  int io_threads = 2;
  bool sync = false;  // fsync the WAL before acknowledging each write (survives power loss)

  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{16} << 20;
  size_t max_frame_bytes = size_t{64} << 20;
  uint64_t tombstone_grace_ms = uint64_t{10} * 24 * 3600 * 1000;  // Cassandra's gc_grace
  uint64_t max_clock_offset_ms = 500;
  // Background anti-entropy (design.md "Anti-entropy"): each node compares the ranges it drives
  // with their other replicas, every range once within repair_period_ms, its tree scans at most
  // repair_rate keys a second. Period 0: tombstone_grace_ms / 10, within [kMinRepairPeriodMs,
  // kMaxRepairPeriodMs] (EffectiveRepairPeriodMs), so a missed delete is repaired well before
  // its tombstone may be collected.
  bool background_repair = true;
  uint64_t repair_period_ms = 0;
  uint64_t repair_rate = 10000;
  // Cluster maps are decided by Raft among the voting members (design.md "Consensus"); off: the
  // compare-and-set commit of earlier releases (no majority rule; kept for comparison tests).
  bool map_consensus = true;
  // At Stop() (SIGTERM), the consensus leader first hands on what it leads: it marks a change it
  // drives as handed on and transfers leadership to another voter (bounded, ~3 s), so a rolling
  // restart neither waits for an election nor counts as a driver death. false: stop as a crash
  // would (the takeover tests use it to kill a driver in process).
  bool hand_off_at_stop = true;
  size_t block_cache_bytes = size_t{64} << 20;
  // Other nodes to contact at start (host:port), for joining or fetching the newest map.
  std::vector<std::string> seeds;
  // Rebuild (design.md "Replication and consistency": a node down longer than tombstone_grace must
  // not rejoin with its data): drop every local key, fetch the cluster map from `seeds`, re-stream
  // every range this node holds from the other replicas, and only then serve. REQUIRES: seeds.
  bool rebuild = false;
  // host:port of the HTTP metrics listener: GET /metrics (Prometheus text format), /healthz and
  // /readyz (design.md "Metrics"). Empty: none. Port 0 picks a free port, written to
  // <data_dir>/metrics_port. Served without authentication (read-only figures, no keys or
  // values); a non-loopback host needs a secret or `insecure`, as every listener does.
  std::string metrics_listen;

  // ---- Authentication and transport security (design.md "Authentication") ----
  // The cluster secret: a file of at least 16 bytes (trailing whitespace stripped). With it
  // every connection, node-to-node and client-to-node, must pass an HMAC-SHA256
  // challenge-response before its first request. Empty: no authentication.
  std::string auth_secret_file;
  // Optional client secret: a connection authenticated with it may run data and admin
  // operations but never node-to-node ones. Empty: clients use the cluster secret.
  std::string client_secret_file;
  // Allow listening on a non-loopback address without a secret (otherwise Start refuses).
  bool insecure = false;
  // Optional TLS (all three, or none): PEM certificate chain and key of this node, and the CA
  // that signs every node's (and client's) certificate. Between nodes TLS is mutual.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_ca_file;

  // For tests only: every write-side operation on a file of the node's database (create, append,
  // sync, rename, delete) asks this first, and a non-OK Status fails it as an I/O error
  // (ResourceExhausted: as a full disk). Null: no injection.
  std::function<Status(const std::string& file)> storage_fault_injection_for_test;
  // For tests only: false keeps this node from polling its peers' needs-repair marks, so it does
  // not learn that it needs repair itself (as right after a partition heals, before its poll).
  bool learn_repair_marks_for_test = true;
  // For tests only: false collects tombstones by the grace alone, without the GC rule of
  // anti-entropy (design.md "Tombstones and GC"): what replicas of an earlier release do, and
  // what the needs-repair tests model (replicas that purged deletes a node away missed).
  bool gc_waits_for_repair_for_test = true;
};

// OK if Node::Start would accept `options`; otherwise InvalidArgument naming the bad field in
// the words of shardkv-node's flags (it checks them with this before starting anything).
Status ValidateNodeOptions(const NodeOptions& options);

// The period background anti-entropy runs with (NodeOptions::repair_period_ms, or its default).
uint64_t EffectiveRepairPeriodMs(const NodeOptions& options);

// Per put: the key's expiry (design.md "Expiry").
struct PutOptions {
  // > 0: the key expires this long after the coordinator takes the write. 0: no expiry, and a
  // put clears any TTL the key had (as Redis's SET does). Negative: InvalidArgument.
  std::chrono::milliseconds ttl{0};
  // Write the value only and keep the key's current expiry (Redis SET ... KEEPTTL); `ttl` must
  // then be 0.
  bool keep_ttl = false;
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
  // The secret this client authenticates with (the cluster's client secret, or its cluster
  // secret): a file, as NodeOptions::auth_secret_file. Empty: none (a node that requires one
  // refuses the connection with Unauthenticated).
  std::string auth_secret_file;
  // Optional TLS: the CA that signs the nodes' certificates (verifies them), and this client's
  // own certificate and key when the nodes require client certificates.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

}  // namespace shardkv
