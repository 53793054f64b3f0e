// RedisSession: the state of one Redis connection (protocol, authentication, name, consistency,
// a refused transaction in progress), and what CLIENT LIST shows of it.
//
// The connection's own commands change it one at a time (a connection runs one batch at a
// time); CLIENT LIST on another connection reads it concurrently, so the fields it shows are
// behind a mutex.
//
// Thread-safety: the fields under mu_ through the accessors; the rest only by the connection's
// running batch.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "net/messages.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {

// A connection whose name (CLIENT SETNAME, HELLO ... SETNAME) starts with this is node-scoped:
// its SCAN and KEYS cover only this node's emulated slot range and its DBSIZE counts only that
// share, as a Redis Cluster node's do, so that a cluster client that scans every primary sees
// each key once (design.md "Scans"). The rule keys on the name because the name is the one
// thing redis-py, ioredis and node-redis can all be told to send on every node connection; none
// of them sends CLUSTER SLOTS or READONLY on the connections it scans with.
inline constexpr std::string_view kNodeScopedNamePrefix = "shardkv-cluster";

class RedisSession {
 public:
  RedisSession(uint64_t id, std::string addr, std::string laddr, bool auth_required)
      : id_(id),
        addr_(std::move(addr)),
        laddr_(std::move(laddr)),
        auth_required_(auth_required),
        authenticated_(!auth_required),
        created_(std::chrono::steady_clock::now()),
        last_command_(created_) {}

  uint64_t id() const { return id_; }
  bool auth_required() const { return auth_required_; }
  bool authenticated() const { return authenticated_; }
  void set_authenticated(bool v) { authenticated_ = v; }
  net::Consistency consistency() const { return consistency_; }
  void set_consistency(net::Consistency c) { consistency_ = c; }
  // Between a refused MULTI and the EXEC or DISCARD that ends it: the commands a client queues
  // there must not run (RedisCommands answers them with EXECABORT).
  bool in_refused_transaction() const { return in_refused_transaction_; }
  void set_in_refused_transaction(bool v) { in_refused_transaction_ = v; }

  resp::Protocol protocol() const {
    common::MutexLock lock(&mu_);
    return protocol_;
  }
  void set_protocol(resp::Protocol p) {
    common::MutexLock lock(&mu_);
    protocol_ = p;
  }
  std::string name() const {
    common::MutexLock lock(&mu_);
    return name_;
  }
  void set_name(std::string name) {
    common::MutexLock lock(&mu_);
    name_ = std::move(name);
  }
  // See kNodeScopedNamePrefix. RESET clears the name, and with it the scope.
  bool node_scoped() const {
    common::MutexLock lock(&mu_);
    return std::string_view(name_).substr(0, kNodeScopedNamePrefix.size()) == kNodeScopedNamePrefix;
  }
  void set_lib(bool version, std::string value) {
    common::MutexLock lock(&mu_);
    (version ? lib_ver_ : lib_name_) = std::move(value);
  }
  void NoteCommand(std::string name) {
    common::MutexLock lock(&mu_);
    last_command_name_ = std::move(name);
    last_command_ = std::chrono::steady_clock::now();
  }
  // RESET: back to a new connection's state (the id and addresses stay).
  void Reset() {
    authenticated_ = !auth_required_;
    consistency_ = net::Consistency::kDefault;
    in_refused_transaction_ = false;
    common::MutexLock lock(&mu_);
    protocol_ = resp::Protocol::kResp2;
    name_.clear();
  }

  // The CLIENT LIST / CLIENT INFO line, without its trailing newline.
  std::string InfoLine() const {
    common::MutexLock lock(&mu_);
    const auto now = std::chrono::steady_clock::now();
    const auto secs = [&](auto since) {
      return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - since).count());
    };
    return "id=" + std::to_string(id_) + " addr=" + addr_ + " laddr=" + laddr_ + " name=" + name_ +
           " age=" + secs(created_) + " idle=" + secs(last_command_) +
           " flags=N db=0 sub=0 psub=0 ssub=0 multi=-1 cmd=" +
           (last_command_name_.empty() ? "NULL" : last_command_name_) +
           " user=default redir=-1 resp=" + std::to_string(static_cast<int>(protocol_)) +
           " lib-name=" + lib_name_ + " lib-ver=" + lib_ver_;
  }

 private:
  const uint64_t id_;
  const std::string addr_;
  const std::string laddr_;
  const bool auth_required_;
  bool authenticated_;
  net::Consistency consistency_ = net::Consistency::kDefault;
  bool in_refused_transaction_ = false;

  mutable common::Mutex mu_;
  resp::Protocol protocol_ GUARDED_BY(mu_) = resp::Protocol::kResp2;
  std::string name_ GUARDED_BY(mu_);
  std::string lib_name_ GUARDED_BY(mu_);
  std::string lib_ver_ GUARDED_BY(mu_);
  std::string last_command_name_ GUARDED_BY(mu_);
  const std::chrono::steady_clock::time_point created_;
  std::chrono::steady_clock::time_point last_command_ GUARDED_BY(mu_);
};

}  // namespace shardkv::redis
