// RpcClient: sends Requests to one server address ("host:port") and matches the Responses.
//
// Calls are pipelined: a call is encoded, queued on one of the client's pooled connections
// (round-robin) and written together with whatever else is queued; responses are matched by
// request id, in any order. The client assigns request ids (it overwrites Request::id).
// Connections are opened lazily on the first call and re-opened on the next call after an
// error. Every call has a deadline; a call that misses it fails with Timeout (a late response
// is then ignored).
//
// Result of a call:
//   - ok(): a Response arrived. It may still carry the server's error (Response::status(),
//     e.g. StaleEpoch together with the newer cluster map).
//   - Timeout: no response before the deadline ("127.0.0.1:7001: timed out after 100 ms").
//   - Unavailable: could not connect, or the connection broke while the call was in flight
//     ("127.0.0.1:7001: connection refused"). A call in flight when the connection broke may
//     or may not have been executed by the server.
//   - Corruption / other codes: the server sent bytes that are not a valid response, or
//     answered a connection-level error; the connection is dropped.
//   - Unauthenticated: the node refused this client's secret (or has none while the client has
//     one, or the reverse), or could not prove it knows the secret; retrying will not help.
//   - InvalidArgument: the request cannot be encoded (too large) or the address is invalid.
//   - Aborted: the client was closed or destroyed before the call completed.
// Every message starts with the address.
//
// Thread-safety: Call/CallSync/stats may be used concurrently from any number of threads.
// Callbacks run on an I/O thread of the client's IoContext, one at a time per connection, so
// they must not block (CallSync inside a callback is refused). The exceptions: a call made
// after Close(), or while the IoContext is stopped, fails on the calling thread before Call
// returns; Close()/~RpcClient run the callbacks of abandoned calls on the closing thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "net/codec.h"
#include "net/io_context.h"
#include "net/messages.h"
#include "net/tls_context.h"
#include "shardkv/status.h"

namespace shardkv::net {

struct RpcClientOptions {
  // Connections to the address; calls are spread over them round-robin. One connection
  // pipelines well; more spread the work over more I/O threads.
  int connections = 1;
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(3)};
  CodecOptions codec;
  // Threads of the private IoContext, used only when the constructor is given none.
  int io_threads = 1;
  // Non-empty: every connection starts with the authentication handshake (design.md
  // "Authentication") using this secret, within connect_timeout. A refusal, or a node that
  // cannot prove it knows the secret, fails the connection's calls with Unauthenticated.
  std::string auth_secret;
  // Non-null: every connection is TLS (tls_context.h), the server's certificate verified against
  // the CA and the host dialed; the handshake counts against connect_timeout too.
  std::shared_ptr<const TlsContext> tls;
  // When a call times out on a connection that has received nothing since the call was sent,
  // the connection may be dead without TCP knowing it (a partition, a stopped peer: TCP keeps
  // retransmitting into it for many seconds after the network heals). The channel then sends a
  // ping; if that gets no reply within probe_timeout either, the connection is reset, its other
  // calls fail with Unavailable (callers retry), and the next call reconnects. A peer that is
  // merely slow answers the ping and keeps its connection. Zero disables the probe.
  std::chrono::milliseconds probe_timeout{std::chrono::seconds(1)};
};

class RpcClient {
 public:
  using Clock = std::chrono::steady_clock;
  using Callback = std::function<void(StatusOr<Response>)>;

  struct Stats {
    uint64_t calls = 0;
    uint64_t timeouts = 0;
    uint64_t connects = 0;          // successful connection attempts
    uint64_t connect_failures = 0;  // failed connection attempts
    uint64_t in_flight = 0;
    uint64_t probes = 0;  // liveness pings sent after a call timed out on a silent connection
    uint64_t resets = 0;  // connections reset because a probe went unanswered too
  };

  // `address` is "host:port" or "[ipv6]:port". With a null `io`, the client starts its own
  // IoContext with options.io_threads threads. Otherwise `io` is shared with other clients and
  // REQUIRES: it is not stopped while this client is in use.
  explicit RpcClient(std::string address, RpcClientOptions options = {},
                     std::shared_ptr<IoContext> io = nullptr);
  // Closes the client (see Close()). REQUIRES: not called from one of the client's callbacks
  // when the client owns its IoContext (the I/O thread cannot join itself).
  ~RpcClient();
  RpcClient(const RpcClient&) = delete;
  RpcClient& operator=(const RpcClient&) = delete;

  // Sends `request` and calls `done` exactly once with the outcome (see above).
  void Call(Request request, Clock::time_point deadline, Callback done);
  void Call(Request request, std::chrono::milliseconds timeout, Callback done);
  // The same with patience: at `deadline` the connection is pinged (probe_timeout) instead of the
  // call failing. A node that answers the ping is alive, merely slow (a 16 MiB value on a loaded
  // machine), and the call may wait until `patient_until`; one that does not is reset, and the
  // call fails with Unavailable so the caller tries another replica. REQUIRES: probe_timeout > 0
  // for the patience to apply (otherwise the call ends at `deadline`).
  void Call(Request request, Clock::time_point deadline, Clock::time_point patient_until,
            Callback done);

  // Blocking convenience over Call(). Returns FailedPrecondition if called on an I/O thread of
  // this client's IoContext (it would wait for itself).
  StatusOr<Response> CallSync(Request request, std::chrono::milliseconds timeout);

  // Fails every pending call with Aborted and closes the connections. Later calls fail with
  // Aborted. Idempotent.
  void Close();

  const std::string& address() const;
  Stats stats() const;

  class Channel;  // one pooled connection (rpc_channel.h)

 private:
  struct Shared;
  std::shared_ptr<IoContext> io_;
  std::shared_ptr<Shared> shared_;
  std::vector<std::shared_ptr<Channel>> channels_;
};

// Splits "host:port" or "[ipv6]:port". Returns InvalidArgument for anything else.
Status ParseHostPort(const std::string& address, std::string* host, uint16_t* port);

}  // namespace shardkv::net
