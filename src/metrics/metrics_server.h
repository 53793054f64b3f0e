// MetricsServer: the node's HTTP listener for Prometheus and load balancers (design.md
// "Metrics"). It serves
//   GET /metrics  the Prometheus text format 0.0.4 (the `metrics` callback's text);
//   GET /healthz  200 "ok" while the process is alive;
//   GET /readyz   200 "ready" while `ready` is OK, else 503 with its message on one line;
// and 404 for any other path, 405 for another method. No authentication: like Prometheus
// exporters, it serves read-only figures (no keys, no values) to whoever can reach it; the
// node's protected mode (node::CheckListenerProtected) keeps it on loopback unless a secret is
// set or --insecure is given.
//
// HTTP is Debian's cpp-httplib (a kept library), confined to metrics_server.cc. Its own limits
// bound a request: 8 KiB of request line and headers, `max_body_bytes` of body, a read and
// write timeout, a few requests per keep-alive connection; a fixed pool of `threads` serves the
// connections. A bad request gets a 4xx from httplib and touches nothing else of the node.
//
// Thread-safety: Start() and Stop() from one thread; the callbacks run on the pool's threads,
// concurrently with each other and with the node.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "shardkv/status.h"

namespace shardkv::metrics {

struct MetricsServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: any free port (bound_port() tells which)
  int threads = 2;
  size_t max_body_bytes = 1024;  // no endpoint takes a body
  int timeout_ms = 5000;         // read and write timeout of a connection
};

struct MetricsHandlers {
  std::function<std::string()> metrics;  // the /metrics body
  std::function<Status()> ready;         // /readyz: OK, or why not
};

class MetricsServer {
 public:
  MetricsServer(MetricsServerOptions options, MetricsHandlers handlers);
  ~MetricsServer();  // Stop()s
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Binds and starts serving; returns once it accepts connections. IOError if it cannot bind.
  Status Start();
  // Stops accepting, lets in-flight requests finish (each bounded by the timeouts), joins.
  // Idempotent.
  void Stop();
  uint16_t bound_port() const { return port_; }

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
};

}  // namespace shardkv::metrics
