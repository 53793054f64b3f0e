#include "metrics/metrics_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <chrono>
#include <exception>
#include <thread>

namespace shardkv::metrics {

class MetricsServer::Impl {
 public:
  Impl(MetricsServerOptions options, MetricsHandlers handlers)
      : options_(std::move(options)), handlers_(std::move(handlers)) {}

  StatusOr<uint16_t> Start();
  void Stop();

 private:
  void Routes();

  MetricsServerOptions options_;
  MetricsHandlers handlers_;
  httplib::Server server_;
  std::thread thread_;
};

namespace {

constexpr char kTextFormat[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kPlain[] = "text/plain; charset=utf-8";

// One line, whatever the status message holds: a load balancer logs the first line only.
std::string OneLine(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s + "\n";
}

}  // namespace

void MetricsServer::Impl::Routes() {
  server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(handlers_.metrics ? handlers_.metrics() : std::string(), kTextFormat);
  });
  server_.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", kPlain);
  });
  server_.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const Status ready = handlers_.ready ? handlers_.ready() : Status::OK();
    if (ready.ok()) {
      res.set_content("ready\n", kPlain);
    } else {
      res.status = 503;
      res.set_content(OneLine("not ready: " + ready.message()), kPlain);
    }
  });
  // Every other method on a known path: 405, so a misdirected POST is not mistaken for a
  // missing endpoint.
  auto not_allowed = [](const httplib::Request& req, httplib::Response& res) {
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content(OneLine("method " + req.method + " not allowed"), kPlain);
  };
  for (const char* path : {"/metrics", "/healthz", "/readyz"}) {
    server_.Post(path, not_allowed);
    server_.Put(path, not_allowed);
    server_.Delete(path, not_allowed);
    server_.Patch(path, not_allowed);
  }
  server_.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(
          OneLine(std::to_string(res.status) +
                  (res.status == 404 ? " not found (try /metrics, /healthz, /readyz)" : " error")),
          kPlain);
    }
  });
  server_.set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        res.status = 500;
        res.set_content(OneLine("internal error: " + what), kPlain);
      });
}

StatusOr<uint16_t> MetricsServer::Impl::Start() {
  Routes();
  const int threads = std::max(1, options_.threads);
  server_.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server_.set_payload_max_length(options_.max_body_bytes);
  const auto timeout = std::chrono::milliseconds(std::max(1, options_.timeout_ms));
  server_.set_read_timeout(timeout);
  server_.set_write_timeout(timeout);
  // Short keep-alive: Stop() waits for open connections, and Prometheus reconnects cheaply.
  server_.set_keep_alive_timeout(1);
  server_.set_keep_alive_max_count(10);
  // httplib's default sets SO_REUSEPORT, which would let a second node bind the same port and
  // steal half the scrapes; SO_REUSEADDR alone is what a restarting listener needs.
  server_.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  int port = options_.port;
  if (port == 0) {
    port = server_.bind_to_any_port(options_.host);
    if (port <= 0) port = 0;
  } else if (!server_.bind_to_port(options_.host, port)) {
    port = 0;
  }
  if (port == 0) {
    return Status::IOError("cannot listen on " + options_.host + ":" +
                           std::to_string(options_.port) + " (--metrics-listen)");
  }
  thread_ = std::thread([this] {
    try {
      if (!server_.listen_after_bind()) spdlog::warn("metrics listener ended with an error");
    } catch (const std::exception& e) {
      spdlog::error("metrics listener failed: {}", e.what());
    }
  });
  // httplib's stop() is a no-op until the accept loop runs: wait for it, so that a Stop() right
  // after Start() cannot leave the thread listening forever.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_.is_running() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server_.is_running()) {
    Stop();
    return Status::Internal("the metrics listener did not start within 10 s");
  }
  return static_cast<uint16_t>(port);
}

void MetricsServer::Impl::Stop() {
  if (!thread_.joinable()) return;
  server_.stop();
  thread_.join();
}

MetricsServer::MetricsServer(MetricsServerOptions options, MetricsHandlers handlers)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(handlers))) {}

MetricsServer::~MetricsServer() { Stop(); }

Status MetricsServer::Start() {
  auto port = impl_->Start();
  if (!port.ok()) return port.status();
  port_ = *port;
  return Status::OK();
}

void MetricsServer::Stop() { impl_->Stop(); }

}  // namespace shardkv::metrics
