// Client: talks to a shardkv cluster. It fetches the cluster map from a seed node and routes each
// key to its coordinator (the first live replica under the current map), so most requests take
// one network hop. When a node answers with a newer map the client switches to it transparently.
//
// Errors come back as Status naming the node address and the cause. A request that fails with a
// transient error (unreachable node, timeout, stale map) is retried at most
// ClientOptions::max_retries times, on the next replica where that helps, and never past
// ClientOptions::timeout_ms: an error reaches the caller instead of being retried forever.
//
// One cluster only: a client talks to the cluster ClientOptions::cluster_id names (or, with 0, to
// the first one it reaches). A node of another cluster is refused, whether its map comes back
// from a seed or it refuses a request as foreign; the error (Unavailable) names both ids, as in
// "127.0.0.1:7000 belongs to cluster B, not cluster A". Requests fail over to other replicas.
//
// Semantics: last-write-wins by hybrid-logical-clock timestamp. Every request carries the newest
// timestamp this client has seen, so a client's later write always wins over its earlier one.
// Concurrent writes to one key from different clients keep the newer timestamp; the other is
// lost. Keys are hash-partitioned: there are no ordered range scans, only the unordered,
// resumable Scan below.
//
// Thread-safety: all methods are thread-safe. Async callbacks run on the client's network
// threads: they must not block and must not call the client's synchronous methods.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shardkv/cluster_map.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv {

struct NodeStatsSnapshot {
  std::string address;
  std::map<std::string, int64_t> counters;
  std::map<std::string, double> gauges;
  // Text stats (shardkv/stats.h SHARDKV_NODE_INFO: version, address); empty from older nodes.
  std::map<std::string, std::string> info;
};

// Splits "host:port" (IPv6 hosts in brackets). InvalidArgument, saying what is wrong, for
// anything else: a missing or non-numeric port, a port of 0 or above 65535, an empty host.
Status ParseHostPort(const std::string& address, std::string* host, uint16_t* port);

// Client::Scan's options. `match` is a Redis glob (`*`, `?`, `[...]`, `[^...]`, `\` escapes;
// empty: every key); `count` a hint of how many entries one call examines (0: 10), as Redis's
// SCAN COUNT: a call may return fewer keys (none, with a selective `match`) or somewhat more.
struct ScanOptions {
  std::string match;
  uint32_t count = 0;
};

// One batch of a scan: its keys, and the cursor to pass to the next call (0: the scan is done).
struct ScanPage {
  std::vector<std::string> keys;
  uint64_t cursor = 0;
};

class Client {
 public:
  using ValueCallback = std::function<void(StatusOr<std::string>)>;
  using WriteCallback = std::function<void(StatusOr<uint64_t>)>;

  // Connects to the first reachable seed and fetches the cluster map. InvalidArgument for a
  // seed that is no host:port; Unavailable (naming every seed tried) if no node of the
  // expected cluster answers.
  static StatusOr<std::unique_ptr<Client>> Connect(ClientOptions options);
  // The cluster id the client talks to (ClientOptions::cluster_id, or the adopted one).
  uint64_t cluster_id() const;
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // NotFound if the key is absent or deleted; FailedPrecondition (reason kWrongType) for a hash
  // or a set.
  StatusOr<std::string> Get(std::string_view key, Consistency c = Consistency::kDefault);
  // Returns the write's timestamp.
  StatusOr<uint64_t> Put(std::string_view key, std::string_view value,
                         Consistency c = Consistency::kDefault);
  StatusOr<uint64_t> Delete(std::string_view key, Consistency c = Consistency::kDefault);

  // ---- Expiry (client_ttl.cc). Expiry is its own last-write-wins register next to the value:
  // Expire and Persist never overwrite a value, and a later plain Put clears a TTL.
  // Put with a TTL (or KEEPTTL). InvalidArgument for a negative TTL, a TTL with keep_ttl, or
  // one whose expiry time overflows.
  StatusOr<uint64_t> Put(std::string_view key, std::string_view value, const PutOptions& options,
                         Consistency c = Consistency::kDefault);
  void PutAsync(std::string key, std::string value, const PutOptions& options, WriteCallback done,
                Consistency c = Consistency::kDefault);
  // Expires the key `ttl` from now (ttl <= 0 deletes it, as Redis's EXPIRE does). NotFound if
  // the key has no live value. Read-then-write: not atomic with a concurrent Delete elsewhere.
  StatusOr<uint64_t> Expire(std::string_view key, std::chrono::milliseconds ttl,
                            Consistency c = Consistency::kDefault);
  // Expires the key at `unix_ms` (ms since the Unix epoch; one in the past deletes it).
  // unix_ms 0 is InvalidArgument (use Persist).
  StatusOr<uint64_t> ExpireAt(std::string_view key, uint64_t unix_ms,
                              Consistency c = Consistency::kDefault);
  // Adds `delta` (negative: subtracts) to the counter `key` and returns its value after that, as
  // Redis's INCRBY (design.md "Counters"): increments through different nodes at once all
  // count, and an acknowledged one is never lost. A missing key counts from 0; a key holding a
  // string that is not an integer is InvalidArgument, as is a result outside int64. Never
  // retried once an attempt may have been applied: that error says the outcome is unknown.
  StatusOr<int64_t> Incr(std::string_view key, int64_t delta = 1,
                         Consistency c = Consistency::kDefault);

  // ---- Hashes (client_hash.cc; design.md "Hashes"): each field a last-write-wins register, so
  // concurrent HSets of different fields through different nodes all survive. A key holding a
  // string is FailedPrecondition with reason kWrongType.
  // Sets `fields` (name, value; a name given twice takes its last value); returns how many were
  // new. `only_new`: as HSETNX, leaves fields that exist.
  StatusOr<uint32_t> HSet(std::string_view key,
                          const std::vector<std::pair<std::string, std::string>>& fields,
                          bool only_new = false, Consistency c = Consistency::kDefault);
  // Deletes `fields`; returns how many existed. The last field deleted deletes the key.
  StatusOr<uint32_t> HDel(std::string_view key, const std::vector<std::string>& fields,
                          Consistency c = Consistency::kDefault);
  // The hash's fields by name; NotFound if the key is missing.
  StatusOr<std::map<std::string, std::string>> HGetAll(std::string_view key,
                                                       Consistency c = Consistency::kDefault);

  // ---- Sets (client_collections.cc; design.md "Sets"): an add-wins observed-remove set, so
  // concurrent SAdds through different nodes all survive, and an SRem removes only the adds it
  // saw (a concurrent SAdd of the member wins). A key holding another kind of value is
  // FailedPrecondition with reason kWrongType.
  // Adds `members`; returns how many were not in the set.
  StatusOr<uint32_t> SAdd(std::string_view key, const std::vector<std::string>& members,
                          Consistency c = Consistency::kDefault);
  // Removes `members`; returns how many were in it. The set without members is the key gone.
  StatusOr<uint32_t> SRem(std::string_view key, const std::vector<std::string>& members,
                          Consistency c = Consistency::kDefault);
  // The set's members in ascending byte order; NotFound if the key is missing.
  StatusOr<std::vector<std::string>> SMembers(std::string_view key,
                                              Consistency c = Consistency::kDefault);
  // Removes the key's expiry. NotFound if the key has no live value.
  StatusOr<uint64_t> Persist(std::string_view key, Consistency c = Consistency::kDefault);
  // The key's value and its expiry time (Unix ms, 0 = none). NotFound if absent or expired.
  struct ValueWithExpiry {
    std::string value;
    uint64_t expires_at_ms = 0;
  };
  StatusOr<ValueWithExpiry> GetWithExpiry(std::string_view key,
                                          Consistency c = Consistency::kDefault);
  // The remaining time to live, by this client's wall clock against the node's expiry time
  // (clamped at 0); nullopt for a key with no expiry; NotFound if the key is absent or expired.
  StatusOr<std::optional<std::chrono::milliseconds>> Ttl(std::string_view key,
                                                         Consistency c = Consistency::kDefault);

  void GetAsync(std::string key, ValueCallback done, Consistency c = Consistency::kDefault);
  void PutAsync(std::string key, std::string value, WriteCallback done,
                Consistency c = Consistency::kDefault);
  void DeleteAsync(std::string key, WriteCallback done, Consistency c = Consistency::kDefault);

  // Batches, split per coordinator and sent in parallel. Result i is for input i.
  std::vector<StatusOr<std::string>> MultiGet(const std::vector<std::string>& keys,
                                              Consistency c = Consistency::kDefault);
  std::vector<StatusOr<uint64_t>> MultiPut(
      const std::vector<std::pair<std::string, std::string>>& items,
      Consistency c = Consistency::kDefault);

  // One batch of an unordered scan of the whole cluster. Start with cursor 0 and pass back each
  // page's cursor until it is 0. The cursor is a position in token space, valid across
  // membership changes and restarts: every key present for the whole scan is returned at least
  // once; a key may come twice (around a membership change), and keys written or deleted during
  // the scan may or may not appear. Deleted keys are never returned.
  StatusOr<ScanPage> Scan(uint64_t cursor, const ScanOptions& options = {},
                          Consistency c = Consistency::kDefault);

  // One node's counters (uptime, ops, errors, keys, latency percentiles).
  StatusOr<NodeStatsSnapshot> NodeStats(const std::string& address);
  // The map the client currently routes by.
  std::shared_ptr<const ClusterMap> map() const;
  // Fetches the newest map from the cluster now.
  Status RefreshMap();
  // The newest HLC timestamp this client has seen.
  uint64_t max_seen_timestamp() const;

  class Core;

 private:
  explicit Client(std::shared_ptr<Core> core);
  std::shared_ptr<Core> core_;
};

}  // namespace shardkv
