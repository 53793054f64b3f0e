// Server: accepts TCP connections and feeds their requests to a RequestHandler.
//
// Each connection reads frames (codec.h), decodes them and calls handler->Handle() once per
// request, without waiting for earlier requests to finish: requests are pipelined and their
// responses are written in completion order, each carrying its request's id. Responses that
// complete while a write is in progress are batched into the next write.
//
// Bad input never takes the server down. A garbage or oversized length prefix, a frame that is
// not a valid message, or EOF in the middle of a frame is logged (one line), answered with an
// error Response where the socket still allows it (id 0 if the request id is unknown), and that
// one connection is closed. A well-formed request with an op this build does not know is
// answered with NotSupported and the connection stays open.
//
// Thread-safety: Start(), Stop(), bound_port() and stats() may be called from any thread.
// Stop() may be called from a signal-handling thread, but not from inside Handle() or from a
// `done` callback (it waits for those).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "net/codec.h"
#include "net/messages.h"
#include "net/tls_context.h"
#include "shardkv/status.h"

namespace shardkv::net {

// Serves requests. Implemented by the node (and by tests).
class RequestHandler {
 public:
  virtual ~RequestHandler() = default;

  // Handles one request. Runs on a server I/O thread, so it must not block for long: slow work
  // (disk, calls to other nodes) should be handed off, and `done` called when it finishes.
  // `done` must be called exactly once, from any thread, at any later time, with the response
  // (its id is set by the server). Calling it after the connection closed or the server
  // stopped is safe (the response is dropped). If every copy of `done` is destroyed without
  // being called, the client gets an Internal error for that request.
  virtual void Handle(Request request, std::function<void(Response)> done) = 0;
};

struct ServerOptions {
  std::string host = "127.0.0.1";  // an address or name to bind; "0.0.0.0" / "::" for all
  uint16_t port = 0;               // 0 picks a free port (see bound_port())
  int io_threads = 1;
  // Connections beyond this are answered ResourceExhausted and closed.
  size_t max_connections = 10000;
  // Requests in flight on one connection before the server stops reading from it
  // (backpressure: a client pipelining without reading responses cannot grow memory forever).
  size_t max_in_flight_per_connection = 4096;
  // Unwritten response bytes on one connection before the server stops reading from it.
  size_t max_pending_write_bytes = size_t{64} << 20;
  // A connection with nothing in flight and no bytes received for this long is closed.
  // Zero disables.
  std::chrono::milliseconds idle_timeout{std::chrono::minutes(10)};
  // A connection that stalls in the middle of a frame, or that cannot flush its responses, for
  // this long is closed. Zero disables.
  std::chrono::milliseconds read_timeout{std::chrono::seconds(30)};
  // Stop(): how long to wait for in-flight requests to finish, then for responses to flush.
  std::chrono::milliseconds stop_grace{std::chrono::seconds(5)};
  CodecOptions codec;
  // Authentication (design.md "Authentication"). With a non-empty auth_secret every connection
  // must complete the handshake before its first request; client_secret (optional) admits
  // connections with the client role. A connection that has not completed the handshake within
  // handshake_timeout gets one error and is closed.
  std::string auth_secret;
  std::string client_secret;
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(5)};
  // Non-null: every connection is TLS (tls_context.h) and must present a certificate signed by
  // the CA; the TLS handshake comes first and handshake_timeout bounds it too.
  std::shared_ptr<const TlsContext> tls;
};

class Server {
 public:
  struct Stats {
    uint64_t open_connections = 0;
    uint64_t accepted_connections = 0;  // total since Start()
    uint64_t rejected_connections = 0;  // over max_connections
    uint64_t frames_in = 0;
    uint64_t frames_out = 0;
    uint64_t bad_frames = 0;     // framing or decoding errors (each closes its connection)
    uint64_t in_flight = 0;      // requests handed to the handler and not yet done
    uint64_t auth_failures = 0;  // connections refused by the handshake (or its timeout)
    uint64_t tls_failures = 0;   // connections whose TLS handshake failed (or timed out)
  };

  // REQUIRES: `handler` outlives the server.
  Server(ServerOptions options, RequestHandler* handler);
  // Stops the server (see Stop()).
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds, listens and starts the I/O threads. Returns IOError naming host:port if the address
  // cannot be resolved or bound. REQUIRES: called at most once.
  [[nodiscard]] Status Start();

  // The port actually bound (useful with port 0). 0 before a successful Start().
  uint16_t bound_port() const;

  // Graceful shutdown: stop accepting and stop reading new requests; wait up to stop_grace for
  // in-flight requests to complete, then up to stop_grace for their responses to be written;
  // then close every connection and join the I/O threads. Idempotent; a concurrent second
  // caller returns once the first has finished.
  void Stop();

  Stats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace shardkv::net
