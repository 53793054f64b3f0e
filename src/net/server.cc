#include "net/server.h"

#include <spdlog/spdlog.h>

#include <future>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "net/io_context.h"
#include "net/io_context_impl.h"
#include "net/server_connection.h"

namespace shardkv::net {
namespace {

using Clock = std::chrono::steady_clock;

// After a forced close, how long Stop() waits for the loops to run the closes.
constexpr auto kForceCloseWait = std::chrono::seconds(1);
// Accept errors such as EMFILE repeat immediately; pause so the loop does not spin.
constexpr auto kAcceptErrorBackoff = std::chrono::milliseconds(50);

}  // namespace

class Server::Impl {
 public:
  Impl(ServerOptions options, RequestHandler* handler)
      : shared_(std::make_shared<ServerShared>(std::move(options), handler)) {}

  ~Impl() { Stop(); }

  Status Start();
  void Stop();
  uint16_t bound_port() const { return port_.load(std::memory_order_acquire); }
  Stats stats() const;

 private:
  asio::awaitable<void> AcceptLoop();
  void Reject(asio::ip::tcp::socket socket);
  std::vector<std::shared_ptr<ServerConnection>> LiveConnections();
  // Waits on shared_->idle_cv until `done()` or `deadline`. Returns done(). `done` runs with
  // shared_->mu held, but the analysis checks it as a lambda holding no lock, so it may read
  // only atomics (it does), not state guarded by shared_->mu.
  template <typename Pred>
  bool WaitUntil(Clock::time_point deadline, Pred done);

  const std::shared_ptr<ServerShared> shared_;
  std::unique_ptr<IoContext> io_;
  std::unique_ptr<asio::ip::tcp::acceptor> acceptor_;  // used on loop 0 only, after Start()
  std::atomic<uint16_t> port_{0};
  uint64_t next_connection_id_ = 0;  // accept loop only

  common::Mutex stop_mu_;  // serializes Start() and Stop()
  bool started_ GUARDED_BY(stop_mu_) = false;
  bool stopped_ GUARDED_BY(stop_mu_) = false;
};

Status Server::Impl::Start() {
  common::MutexLock lock(&stop_mu_);
  if (started_ || stopped_) return Status::FailedPrecondition("Server::Start called twice");
  const ServerOptions& o = shared_->options;
  const std::string where = o.host + ":" + std::to_string(o.port);
  io_ = std::make_unique<IoContext>(o.io_threads, "shardkv-srv");
  asio::io_context& loop0 = io_->impl().At(0);

  std::error_code ec;
  asio::ip::tcp::resolver resolver(loop0);
  auto endpoints =
      resolver.resolve(o.host, std::to_string(o.port), asio::ip::tcp::resolver::passive, ec);
  if (ec) {
    io_.reset();
    return Status::IOError(where + ": cannot resolve: " + ErrorText(ec));
  }
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(loop0);
  for (const auto& entry : endpoints) {
    std::error_code ignored;
    acceptor->close(ignored);
    if (acceptor->open(entry.endpoint().protocol(), ec)) continue;
    acceptor->set_option(asio::socket_base::reuse_address(true), ignored);
    if (acceptor->bind(entry.endpoint(), ec)) continue;
    if (acceptor->listen(asio::socket_base::max_listen_connections, ec)) continue;
    break;
  }
  if (ec || !acceptor->is_open()) {
    acceptor.reset();
    io_.reset();
    return Status::IOError(where +
                           ": cannot listen: " + (ec ? ErrorText(ec) : std::string("no address")));
  }
  port_.store(acceptor->local_endpoint(ec).port(), std::memory_order_release);
  acceptor_ = std::move(acceptor);
  asio::co_spawn(loop0, AcceptLoop(), asio::detached);
  started_ = true;
  spdlog::debug("shardkv server: listening on {}:{}", o.host, bound_port());
  return Status::OK();
}

asio::awaitable<void> Server::Impl::AcceptLoop() {
  const ServerOptions& o = shared_->options;
  for (;;) {
    asio::io_context& target = io_->impl().Next();
    auto [ec, accepted] = co_await acceptor_->async_accept(target, kUseTuple);
    if (shared_->stopping.load(std::memory_order_acquire)) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      spdlog::warn("shardkv server: accept: {}", ErrorText(ec));
      asio::steady_timer backoff(co_await asio::this_coro::executor, kAcceptErrorBackoff);
      co_await backoff.async_wait(kUseTuple);
      continue;
    }
    asio::ip::tcp::socket socket(std::move(accepted));
    shared_->accepted_connections.fetch_add(1, std::memory_order_relaxed);
    if (shared_->open_connections.load(std::memory_order_acquire) >= o.max_connections) {
      shared_->rejected_connections.fetch_add(1, std::memory_order_relaxed);
      Reject(std::move(socket));
      continue;
    }
    auto conn =
        std::make_shared<ServerConnection>(std::move(socket), shared_, ++next_connection_id_);
    {
      common::MutexLock lock(&shared_->mu);
      shared_->connections.emplace(conn->id(), conn);
    }
    conn->Start();
  }
}

void Server::Impl::Reject(asio::ip::tcp::socket socket) {
  // Best effort, without blocking the accept loop: one error frame, then close.
  std::string bytes;
  Status why = Status::ResourceExhausted("too many connections (limit " +
                                         std::to_string(shared_->options.max_connections) + ")");
  if (EncodeResponse(MakeErrorResponse(0, why), &bytes).ok()) {
    std::error_code ec;
    socket.non_blocking(true, ec);
    socket.send(asio::buffer(bytes), 0, ec);
  }
  std::error_code ignored;
  socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  socket.close(ignored);
  spdlog::warn("shardkv server: {}", why.message());
}

std::vector<std::shared_ptr<ServerConnection>> Server::Impl::LiveConnections() {
  std::vector<std::shared_ptr<ServerConnection>> out;
  common::MutexLock lock(&shared_->mu);
  out.reserve(shared_->connections.size());
  for (auto& [id, weak] : shared_->connections) {
    if (auto c = weak.lock()) out.push_back(std::move(c));
  }
  return out;
}

template <typename Pred>
bool Server::Impl::WaitUntil(Clock::time_point deadline, Pred done) {
  common::MutexLock lock(&shared_->mu);
  return shared_->idle_cv.wait_until(lock.native(), deadline, done);
}

void Server::Impl::Stop() {
  common::MutexLock lock(&stop_mu_);
  if (stopped_) return;
  if (started_ && io_->InIoThread()) {
    spdlog::error("shardkv server: Stop() called on a server I/O thread; ignored");
    return;
  }
  stopped_ = true;
  if (!started_) return;
  const auto grace = shared_->options.stop_grace;
  shared_->stopping.store(true, std::memory_order_release);

  // 1. Stop accepting. Closing on loop 0 orders it after any accept the loop is handling, so
  //    no connection is registered after the snapshot below.
  auto closed = std::make_shared<std::promise<void>>();
  auto closed_future = closed->get_future();
  asio::post(io_->impl().At(0), [this, closed] {
    std::error_code ignored;
    acceptor_->close(ignored);
    closed->set_value();
  });
  closed_future.wait_until(Clock::now() + grace);

  // 2. Stop reading; let in-flight requests finish and their responses flush.
  for (auto& c : LiveConnections()) c->BeginStop();
  const size_t stuck_requests =
      WaitUntil(Clock::now() + grace,
                [&] { return shared_->in_flight.load(std::memory_order_acquire) == 0; })
          ? 0
          : shared_->in_flight.load();
  if (stuck_requests > 0) {
    spdlog::warn("shardkv server: stopping with {} requests still in flight", stuck_requests);
  }
  if (!WaitUntil(Clock::now() + grace,
                 [&] { return shared_->open_connections.load(std::memory_order_acquire) == 0; })) {
    for (auto& c : LiveConnections()) c->ForceClose();
    WaitUntil(Clock::now() + kForceCloseWait,
              [&] { return shared_->open_connections.load(std::memory_order_acquire) == 0; });
  }

  // 3. Join the loops. Late `done` calls must not post into a loop about to be destroyed, so
  //    every outbox is closed (under its lock) first.
  io_->Stop();
  for (auto& c : LiveConnections()) {
    Outbox* outbox = c->outbox().get();
    common::MutexLock outbox_lock(&outbox->mu);
    outbox->closed = true;
  }
  acceptor_.reset();
  io_.reset();
}

Server::Stats Server::Impl::stats() const {
  Stats s;
  s.open_connections = shared_->open_connections.load(std::memory_order_relaxed);
  s.accepted_connections = shared_->accepted_connections.load(std::memory_order_relaxed);
  s.rejected_connections = shared_->rejected_connections.load(std::memory_order_relaxed);
  s.frames_in = shared_->frames_in.load(std::memory_order_relaxed);
  s.frames_out = shared_->frames_out.load(std::memory_order_relaxed);
  s.bad_frames = shared_->bad_frames.load(std::memory_order_relaxed);
  s.in_flight = shared_->in_flight.load(std::memory_order_relaxed);
  s.auth_failures = shared_->auth_failures.load(std::memory_order_relaxed);
  s.tls_failures = shared_->tls_failures.load(std::memory_order_relaxed);
  return s;
}

Server::Server(ServerOptions options, RequestHandler* handler)
    : impl_(std::make_unique<Impl>(std::move(options), handler)) {}

Server::~Server() = default;

Status Server::Start() { return impl_->Start(); }

uint16_t Server::bound_port() const { return impl_->bound_port(); }

void Server::Stop() { impl_->Stop(); }

Server::Stats Server::stats() const { return impl_->stats(); }

}  // namespace shardkv::net
