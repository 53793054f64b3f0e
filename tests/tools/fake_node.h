// FakeNode: a test-local listener that speaks just enough of the wire protocol (design.md "Wire
// protocol") to stand in for a one-node cluster: it answers getClusterMap with a map naming
// itself, and answers writes as its mode says. kSilent accepts the write and never replies: the
// node that took the request and went quiet, which a client cannot tell from one that applied
// it. No storage, no RocksDB: the CLI tests of write outcomes need nothing else.
//
// Thread-safety: the constructor starts one serving thread; writes() may be read from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace shardkv::testing {

class FakeNode {
 public:
  enum class Mode {
    kApply,   // answers put/delete with a timestamp
    kRefuse,  // answers put/delete with FailedPrecondition
    kSilent,  // reads put/delete and never answers
  };
  explicit FakeNode(Mode mode);  // listens on 127.0.0.1, port 0
  ~FakeNode();                   // stops the thread and closes every socket
  FakeNode(const FakeNode&) = delete;
  FakeNode& operator=(const FakeNode&) = delete;

  const std::string& address() const { return address_; }
  // Writes (put, delete) received so far, answered or not.
  int writes() const { return writes_.load(); }

 private:
  void Serve();

  const Mode mode_;
  int listen_fd_ = -1;
  std::string address_;
  std::string map_;  // the encoded one-node map it hands out
  std::atomic<bool> stop_{false};
  std::atomic<int> writes_{0};
  std::thread thread_;
};

// A 127.0.0.1 port nothing listens on: bound once, then closed (connections are refused).
uint16_t ClosedPort();

}  // namespace shardkv::testing
