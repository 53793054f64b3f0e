// Node: one shardkv server, embeddable in an application. shardkv-node is a thin main over it.
//
// A Node owns its RocksDB store (NodeOptions::data_dir), listens for clients and peers, and
// serves the shardkv protocol. Start() returns once the node is listening.
//
// Thread-safety: all methods are thread-safe. Stop() may be called from any thread (a signal
// handling thread included) and is idempotent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv {

class Node {
 public:
  // Opens (or creates) the store and starts listening. A fresh node (an empty data directory,
  // options.cluster_id 0) is unformed: no cluster id, no map, until Admin::FormCluster or a
  // join makes it a member (design.md "Unformed nodes"). Errors: bad options (InvalidArgument,
  // before anything is created; see ValidateNodeOptions), a data directory in use by another
  // node, of an unknown format version, without a database or of another cluster while
  // options.cluster_id is set (FailedPrecondition), too little free space (ResourceExhausted),
  // an address that cannot be bound.
  static StatusOr<std::unique_ptr<Node>> Start(NodeOptions options);

  ~Node();  // Stop()s the node.
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  uint32_t id() const;
  uint16_t port() const;
  // The bound port of the metrics listener (options.metrics_listen; also written to
  // <data_dir>/metrics_port), 0 without one.
  uint16_t metrics_port() const;
  // host:port the node states as its own (the cluster map, DATA/address): options.advertise
  // when set, else the address actually bound (port() is always the bound port).
  std::string address() const;

  // Compacts the whole store now, which also runs tombstone GC (outside protected ranges).
  // Returns how many tombstones compaction has collected since the node started.
  StatusOr<uint64_t> Compact();

  // Graceful shutdown: stop accepting, finish in-flight requests, flush, close the store.
  void Stop();
  // Blocks until Stop() has completed (from any thread).
  void Wait();

  class Impl;

 private:
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardkv
