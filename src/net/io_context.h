// IoContext: a small pool of network I/O threads, shareable by many RpcClients (and used
// internally by Server).
//
// Each thread runs its own event loop; an object doing network I/O (a connection) is pinned to
// one loop for its whole life, so its state needs no strand and its handlers never run
// concurrently. Work is spread over the loops round-robin.
//
// The event loop type is hidden (pimpl): this header pulls in no Asio.
//
// Thread-safety: all methods are thread-safe. The destructor stops and joins the threads; it
// REQUIRES that it is not run on one of those threads, and that every object using the pool
// (Server, RpcClient) was destroyed or closed before.
#pragma once

#include <memory>
#include <string>

namespace shardkv::net {

class IoContext {
 public:
  // Starts `threads` (>= 1; smaller values mean 1) threads named "<name>-<i>".
  explicit IoContext(int threads = 1, std::string name = "shardkv-io");
  ~IoContext();
  IoContext(const IoContext&) = delete;
  IoContext& operator=(const IoContext&) = delete;

  int threads() const;

  // True if the caller runs on one of this pool's threads (blocking there would deadlock).
  bool InIoThread() const;

  // Stops the loops and joins the threads. Pending handlers are not run. Idempotent.
  // REQUIRES: !InIoThread().
  void Stop();

  // Internal to src/net (defined in io_context_impl.h).
  class Impl;
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardkv::net
