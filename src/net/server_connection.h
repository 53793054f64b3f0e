// Internal to src/net: one accepted connection of a Server, and the state it shares with the
// server and with outstanding `done` callbacks. Includes Asio; include only from .cc files.
//
// Lifetimes: a ServerConnection is owned by its own coroutines and pending handlers
// (shared_ptr), all on one event loop. A request's `done` callback owns only the connection's
// Outbox, never the connection, so a handler that answers late (or never) keeps no socket
// alive; once the connection closes, the Outbox drops whatever still arrives.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/mutex.h"
#include "net/auth_handshake.h"
#include "net/frame_decoder.h"
#include "net/io_context_impl.h"
#include "net/server.h"
#include "net/transport.h"

namespace shardkv::net {

class ServerConnection;

// Shared by the server and every connection; outlives both, since late `done` callbacks may
// still touch it.
struct ServerShared {
  ServerShared(ServerOptions o, RequestHandler* h) : options(std::move(o)), handler(h) {}

  const ServerOptions options;
  RequestHandler* const handler;

  std::atomic<uint64_t> open_connections{0};
  std::atomic<uint64_t> accepted_connections{0};
  std::atomic<uint64_t> rejected_connections{0};
  std::atomic<uint64_t> frames_in{0};
  std::atomic<uint64_t> frames_out{0};
  std::atomic<uint64_t> bad_frames{0};
  std::atomic<uint64_t> in_flight{0};
  std::atomic<uint64_t> auth_failures{0};
  std::atomic<uint64_t> tls_failures{0};
  std::atomic<bool> stopping{false};

  // Stop() waits on `idle_cv` for in_flight / open_connections to reach zero.
  common::Mutex mu;
  std::condition_variable idle_cv;
  std::unordered_map<uint64_t, std::weak_ptr<ServerConnection>> connections GUARDED_BY(mu);

  void NotifyIdleWaiters() {
    common::MutexLock lock(&mu);
    idle_cv.notify_all();
  }
};

// The responses of one connection on their way to the socket. Written from any thread (the
// handler's `done`), drained by the connection's event loop.
struct Outbox {
  std::shared_ptr<ServerShared> shared;

  // Set once by ServerConnection::Start(), before any request exists.
  asio::any_io_executor executor;  // the connection's event loop
  // Weak on purpose: a `done` callback must never become the connection's last owner (it could
  // then destroy a socket on a foreign thread after its event loop is gone).
  std::weak_ptr<ServerConnection> conn;
  const ServerConnection* conn_raw = nullptr;  // identity only, never dereferenced

  common::Mutex mu;
  bool closed GUARDED_BY(mu) = false;           // responses arriving now are dropped
  bool write_scheduled GUARDED_BY(mu) = false;  // a write is in progress or posted
  bool read_paused GUARDED_BY(mu) = false;      // the read loop waits for backpressure relief
  std::string pending GUARDED_BY(mu);           // encoded frames not yet handed to the socket
  size_t unflushed_bytes GUARDED_BY(mu) = 0;    // pending + the write in progress
  size_t in_flight GUARDED_BY(mu) = 0;          // requests handed to the handler, not done

  // Queues `response` for writing (any thread). Accounts one finished request.
  void Complete(Response response);
};

class ServerConnection : public std::enable_shared_from_this<ServerConnection> {
 public:
  ServerConnection(asio::ip::tcp::socket socket, std::shared_ptr<ServerShared> shared, uint64_t id);
  ~ServerConnection();

  uint64_t id() const { return id_; }
  const std::shared_ptr<Outbox>& outbox() const { return outbox_; }

  // Starts the read loop and the watchdog on the socket's event loop.
  void Start();
  // Any thread: stop reading new requests, finish the in-flight ones, flush, close.
  void BeginStop();
  // Any thread: close now.
  void ForceClose();

  // Event-loop thread only.
  void StartWrite();
  void ResumeReading();

 private:
  static asio::awaitable<void> Run(std::shared_ptr<ServerConnection> self);
  static asio::awaitable<void> Watchdog(std::shared_ptr<ServerConnection> self);
  asio::awaitable<void> ReadLoop();
  // The server side of the authentication handshake (auth_handshake.h). True once the peer
  // proved it knows a secret; otherwise the connection has been refused or closed.
  asio::awaitable<bool> Handshake();
  // Reads one handshake frame of kind `kind` (exact reads, nothing buffered beyond it).
  asio::awaitable<StatusOr<auth::Message>> ReadHandshake(auth::Kind kind);
  asio::awaitable<bool> WriteHandshake(const std::string& frame);
  // One Unauthenticated error frame, then close (no-op once closing).
  void Refuse(const Status& why);
  // Decodes and dispatches every complete buffered frame. Returns false on a protocol error.
  bool DispatchFrames();
  // Queues a response produced on the event loop itself (errors found while reading).
  void EnqueueError(uint64_t request_id, const Status& status);
  void OnWriteDone(const std::error_code& ec);
  // Starts draining: no more reads; close once everything queued is written (and, if
  // `wait_in_flight`, once every in-flight request has answered).
  void Drain(bool wait_in_flight);
  void MaybeFinishDrain();
  void Close(const char* why);
  std::chrono::steady_clock::time_point NextWatchdogDeadline(bool* expired);

  const uint64_t id_;
  const std::shared_ptr<ServerShared> shared_;
  const std::shared_ptr<Outbox> outbox_;
  Transport transport_;
  std::string peer_;

  // Event-loop state (no locking needed: only the connection's loop touches it).
  FrameDecoder decoder_;
  std::string writing_;  // the buffer of the write in progress
  asio::steady_timer resume_timer_;
  asio::steady_timer watchdog_timer_;
  bool closed_ = false;
  bool draining_ = false;
  bool drain_waits_in_flight_ = false;
  bool stop_requested_ = false;
  bool write_in_progress_ = false;
  bool authenticated_ = false;  // the handshake is done (or the node has no secret)
  bool tls_done_ = false;       // the TLS handshake is done (or the node has no TLS)
  auth::Role role_ = auth::Role::kNone;
  std::chrono::steady_clock::time_point accepted_at_;
  std::chrono::steady_clock::time_point last_read_;
  std::chrono::steady_clock::time_point last_write_;
};

}  // namespace shardkv::net
