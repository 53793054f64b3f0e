// RaftTransport: how a RaftReplica's messages reach the other servers. The node implements it
// over its authenticated (TLS) peer RPC; tests over an in-process network they can partition.
#pragma once

#include <cstdint>
#include <string>

namespace shardkv::consensus {

class RaftTransport {
 public:
  virtual ~RaftTransport() = default;
  // Best effort and non-blocking: raft resends what is lost (heartbeats, retries). `message` is
  // EncodeRaftMessage output; the receiver passes it to its RaftReplica::Receive. Called on the
  // sending replica's event loop.
  virtual void Send(uint64_t to, const std::string& address, std::string message) = 0;
};

}  // namespace shardkv::consensus
