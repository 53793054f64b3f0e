#include "redis/redis_server.h"

#include <spdlog/spdlog.h>

#include <array>
#include <asio.hpp>
#include <condition_variable>
#include <map>
#include <optional>
#include <thread>
#include <vector>

#include "common/loop_turn.h"
#include "common/mutex.h"
#include "redis/redis_commands.h"

namespace shardkv::redis {

class RedisConnection;

class RedisServer::Impl : public std::enable_shared_from_this<RedisServer::Impl> {
 public:
  Impl(RedisServerOptions options, CommandContext context)
      : options_(std::move(options)), context_(std::move(context)), commands_(&context_) {
    context_.counters = &counters_;
    context_.client_list = [this] { return ClientList(); };
  }

  Status Start();
  void Stop();
  uint16_t port() const { return port_.load(); }
  ServerCounters& counters() { return counters_; }

  // Called by connections.
  void Unregister(uint64_t id);
  RedisCommands& commands() { return commands_; }
  const RedisServerOptions& options() const { return options_; }
  bool auth_required() const { return !context_.auth_secret.empty(); }

 private:
  void Accept();
  std::vector<std::string> ClientList();

  const RedisServerOptions options_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  asio::ip::tcp::acceptor acceptor_{io_};
  std::vector<std::thread> threads_;
  std::atomic<uint16_t> port_{0};
  ServerCounters counters_;
  CommandContext context_;
  RedisCommands commands_;

  common::Mutex mu_;
  std::condition_variable drained_;
  std::map<uint64_t, std::shared_ptr<RedisConnection>> connections_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
};

// One client connection. Its handlers run on its strand.
class RedisConnection : public std::enable_shared_from_this<RedisConnection> {
 public:
  RedisConnection(RedisServer::Impl* server, asio::ip::tcp::socket socket, uint64_t id)
      : server_(server),
        socket_(std::move(socket)),
        strand_(asio::make_strand(socket_.get_executor())),
        parser_(server->options().limits) {
    std::error_code ec;
    const auto remote = socket_.remote_endpoint(ec);
    const auto local = socket_.local_endpoint(ec);
    session_ = std::make_shared<RedisSession>(
        id, remote.address().to_string() + ":" + std::to_string(remote.port()),
        local.address().to_string() + ":" + std::to_string(local.port()), server->auth_required());
  }

  const std::shared_ptr<RedisSession>& session() const { return session_; }

  void Start() {
    asio::dispatch(strand_, [self = shared_from_this()] { self->Read(); });
  }

  // Stop(): finish the running batch, write its replies, then close.
  void Drain() {
    asio::dispatch(strand_, [self = shared_from_this()] {
      self->draining_ = true;
      self->pending_.clear();
      if (!self->running_ && !self->writing_) self->Close();
    });
  }

  void ForceClose() {
    asio::dispatch(strand_, [self = shared_from_this()] { self->Close(); });
  }

 private:
  bool Paused() const {
    return pending_.size() >= server_->options().max_pending_commands ||
           queued_.size() + write_buf_.size() >= server_->options().max_pending_write_bytes;
  }

  void Read() {
    if (closed_ || draining_ || protocol_error_ || reading_) return;
    if (Paused()) return;  // resumed by a finished batch or write
    reading_ = true;
    socket_.async_read_some(
        asio::buffer(read_buf_),
        asio::bind_executor(strand_, [self = shared_from_this()](std::error_code ec, size_t n) {
          self->reading_ = false;
          if (ec) return self->Close();
          self->OnBytes(std::string_view(self->read_buf_.data(), n));
        }));
  }

  void OnBytes(std::string_view bytes) {
    parser_.Feed(bytes);
    Args args;
    while (parser_.Next(&args)) pending_.push_back(std::move(args));
    if (parser_.poisoned()) protocol_error_ = true;
    MaybeRun();
    Read();
  }

  void MaybeRun() {
    if (running_ || closed_ || draining_) return;
    if (pending_.empty()) {
      if (protocol_error_ && !error_sent_) {
        // As redis-server: the replies of the commands before the bad bytes, then the error.
        error_sent_ = true;
        server_->counters().protocol_errors.fetch_add(1);
        spdlog::info("redis: protocol error from {}: {}", session_->id(),
                     parser_.status().message());
        Queue("-ERR " + parser_.status().message() + "\r\n");
        close_after_write_ = true;
        if (!writing_) Close();
      }
      return;
    }
    running_ = true;
    std::vector<Args> batch = std::move(pending_);
    pending_.clear();
    std::weak_ptr<RedisConnection> weak = shared_from_this();
    server_->commands().Run(
        session_, std::move(batch),
        [weak, keep = server_->shared_from_this()](std::string out, bool close) {
          // `keep`: a batch in flight keeps the commands' state alive.
          auto self = weak.lock();
          if (!self) return;
          asio::post(self->strand_,
                     [self, out = std::move(out), close] { self->OnRun(out, close); });
        });
  }

  void OnRun(const std::string& out, bool close) {
    running_ = false;
    if (closed_) return;
    Queue(out);
    if (close || draining_) {
      close_after_write_ = true;
      pending_.clear();
      if (!writing_) Close();
      return;
    }
    MaybeRun();
    Read();
  }

  void Queue(const std::string& bytes) {
    queued_ += bytes;
    if (!writing_) Write();
  }

  void Write() {
    if (closed_) return;
    if (queued_.empty()) {
      writing_ = false;
      if (close_after_write_ || (draining_ && !running_)) return Close();
      Read();
      return;
    }
    writing_ = true;
    write_buf_.swap(queued_);
    queued_.clear();
    asio::async_write(
        socket_, asio::buffer(write_buf_),
        asio::bind_executor(strand_, [self = shared_from_this()](std::error_code ec, size_t) {
          if (ec) return self->Close();
          self->write_buf_.clear();
          self->Write();
        }));
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    std::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    server_->Unregister(session_->id());
  }

  RedisServer::Impl* server_;
  asio::ip::tcp::socket socket_;
  asio::strand<asio::any_io_executor> strand_;
  resp::RespParser parser_;
  std::shared_ptr<RedisSession> session_;
  std::array<char, 16384> read_buf_{};
  std::vector<Args> pending_;
  std::string queued_;
  std::string write_buf_;
  bool reading_ = false;
  bool running_ = false;
  bool writing_ = false;
  bool close_after_write_ = false;
  bool protocol_error_ = false;
  bool error_sent_ = false;
  bool draining_ = false;
  bool closed_ = false;
};

Status RedisServer::Impl::Start() {
  std::error_code ec;
  asio::ip::tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(options_.host, std::to_string(options_.port), ec);
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  if (ec || endpoints.empty()) {
    return Status::IOError("--redis-listen " + where + ": cannot resolve: " + ec.message());
  }
  const asio::ip::tcp::endpoint endpoint = *endpoints.begin();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Status::IOError("--redis-listen " + where + ": cannot listen: " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  const std::string host = context_.redis_address.empty() ? options_.host : context_.redis_address;
  const bool v6 = host.find(':') != std::string::npos;
  context_.redis_address = (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port_.load());
  work_.emplace(asio::make_work_guard(io_));
  Accept();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] {
      // Group commit (common/loop_turn.h): work deferred here runs behind the ready handlers.
      common::LoopTurn::Install(
          [this](std::function<void()> fn) { asio::defer(io_, std::move(fn)); });
      io_.run();
      common::LoopTurn::Install(nullptr);
    });
  }
  return Status::OK();
}

void RedisServer::Impl::Accept() {
  acceptor_.async_accept([this](std::error_code ec, asio::ip::tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      return Accept();
    }
    std::shared_ptr<RedisConnection> conn;
    {
      common::MutexLock lock(&mu_);
      if (stopping_) return;
      if (connections_.size() >= options_.max_connections) {
        counters_.rejected_connections.fetch_add(1);
        std::error_code ignored;
        asio::write(socket, asio::buffer(std::string("-ERR max number of clients reached\r\n")),
                    ignored);
        socket.close(ignored);
        return Accept();
      }
      const uint64_t id = next_id_++;
      conn = std::make_shared<RedisConnection>(this, std::move(socket), id);
      connections_[id] = conn;
    }
    counters_.connections_received.fetch_add(1);
    counters_.connected_clients.fetch_add(1);
    conn->Start();
    Accept();
  });
}

void RedisServer::Impl::Unregister(uint64_t id) {
  std::shared_ptr<RedisConnection> last;  // released outside the lock
  common::MutexLock lock(&mu_);
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  last = std::move(it->second);
  connections_.erase(it);
  counters_.connected_clients.fetch_sub(1);
  drained_.notify_all();
}

std::vector<std::string> RedisServer::Impl::ClientList() {
  std::vector<std::shared_ptr<RedisSession>> sessions;
  {
    common::MutexLock lock(&mu_);
    for (const auto& [id, conn] : connections_) sessions.push_back(conn->session());
  }
  std::vector<std::string> lines;
  for (const auto& s : sessions) lines.push_back(s->InfoLine());
  return lines;
}

void RedisServer::Impl::Stop() {
  std::vector<std::shared_ptr<RedisConnection>> conns;
  {
    common::MutexLock lock(&mu_);
    if (stopped_ || stopping_) return;
    stopping_ = true;
    for (const auto& [id, conn] : connections_) conns.push_back(conn);
  }
  if (!threads_.empty()) {
    asio::post(io_, [this] {
      std::error_code ec;
      acceptor_.close(ec);
    });
    for (const auto& conn : conns) conn->Drain();
    conns.clear();
    const auto deadline = std::chrono::steady_clock::now() + options_.stop_grace;
    common::MutexLock lock(&mu_);
    while (!connections_.empty()) {
      if (!lock.WaitUntil(drained_, deadline)) break;
    }
    for (const auto& [id, conn] : connections_) conns.push_back(conn);
  }
  for (const auto& conn : conns) conn->ForceClose();
  conns.clear();
  work_.reset();
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  {
    common::MutexLock lock(&mu_);
    stopped_ = true;
    connections_.clear();
  }
}

RedisServer::RedisServer(RedisServerOptions options, CommandContext context)
    : impl_(std::make_shared<Impl>(std::move(options), std::move(context))) {}
RedisServer::~RedisServer() { Stop(); }
Status RedisServer::Start() { return impl_->Start(); }
uint16_t RedisServer::bound_port() const { return impl_->port(); }
void RedisServer::Stop() { impl_->Stop(); }
const ServerCounters& RedisServer::counters() const { return impl_->counters(); }

}  // namespace shardkv::redis
