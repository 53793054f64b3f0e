#include "net/server_connection.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <utility>

namespace shardkv::net {
namespace {

using Clock = std::chrono::steady_clock;

// Read at least this much per syscall; a pipelining client's requests arrive in bursts.
// How often the watchdog re-checks a connection whose state has no deadline (busy handler).
constexpr auto kWatchdogRecheck = std::chrono::seconds(1);

// The connection whose frames are being dispatched on this thread. A `done` called
// synchronously from Handle() then skips the post: the dispatch loop writes once for the whole
// batch of frames it read.
thread_local const ServerConnection* tls_dispatching = nullptr;

// One request's answer slot. Shared by every copy of the handler's `done`; if none of them is
// ever called, the destructor answers Internal so the client is not left waiting.
class Completion {
 public:
  Completion(std::shared_ptr<Outbox> outbox, uint64_t id) : outbox_(std::move(outbox)), id_(id) {}
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  ~Completion() {
    if (called_.load(std::memory_order_acquire)) return;
    try {
      outbox_->Complete(MakeErrorResponse(
          id_, Status::Internal("the request handler dropped the request without answering")));
    } catch (...) {
      // Out of memory while building the error: the request is accounted in Complete() only,
      // so nothing else can be done here.
    }
  }

  void Done(Response response) {
    if (called_.exchange(true, std::memory_order_acq_rel)) {
      spdlog::error("shardkv server: `done` called twice for request {}; ignored", id_);
      return;
    }
    response.id = id_;
    outbox_->Complete(std::move(response));
  }

 private:
  const std::shared_ptr<Outbox> outbox_;
  const uint64_t id_;
  std::atomic<bool> called_{false};
};

bool OverLimits(const ServerOptions& o, size_t in_flight, size_t unflushed_bytes) {
  return in_flight >= o.max_in_flight_per_connection ||
         unflushed_bytes >= o.max_pending_write_bytes;
}

}  // namespace

void Outbox::Complete(Response response) {
  thread_local std::string encoded;
  encoded.clear();
  Status st = EncodeResponse(response, &encoded, shared->options.codec);
  if (!st.ok()) {
    encoded.clear();
    spdlog::error("shardkv server: cannot encode the response to request {}: {}", response.id,
                  st.ToString());
    (void)EncodeResponse(MakeErrorResponse(response.id, st.WithContext("response not sent")),
                         &encoded, shared->options.codec);
  }
  bool now_idle = false;
  {
    common::MutexLock lock(&mu);
    if (in_flight > 0) --in_flight;
    now_idle = shared->in_flight.fetch_sub(1, std::memory_order_acq_rel) == 1;
    if (!closed) {
      pending.append(encoded);
      unflushed_bytes += encoded.size();
      shared->frames_out.fetch_add(1, std::memory_order_relaxed);
      const bool on_loop = tls_dispatching == conn_raw;
      bool need_write = false;
      if (!write_scheduled && !on_loop) {
        write_scheduled = true;
        need_write = true;
      }
      bool need_resume = false;
      if (read_paused && !OverLimits(shared->options, in_flight, unflushed_bytes)) {
        read_paused = false;
        need_resume = true;
      }
      if (need_write || need_resume) {
        // Posted under `mu`, so Server::Stop(), which marks every outbox closed under `mu`
        // before destroying the event loops, cannot destroy a loop between check and post.
        asio::post(executor, [weak = conn, need_write, need_resume] {
          if (auto c = weak.lock()) {
            if (need_resume) c->ResumeReading();
            if (need_write) c->StartWrite();
          }
        });
      }
    }
  }
  ClearKeepingSmall(&encoded);
  if (now_idle) shared->NotifyIdleWaiters();
}

ServerConnection::ServerConnection(asio::ip::tcp::socket socket,
                                   std::shared_ptr<ServerShared> shared, uint64_t id)
    : id_(id),
      shared_(std::move(shared)),
      outbox_(std::make_shared<Outbox>()),
      transport_(std::move(socket)),
      decoder_(shared_->options.codec.max_frame_bytes),
      resume_timer_(transport_.get_executor()),
      watchdog_timer_(transport_.get_executor()) {
  outbox_->shared = shared_;
  std::error_code ec;
  auto ep = transport_.socket().remote_endpoint(ec);
  peer_ =
      ec ? std::string("unknown peer") : ep.address().to_string() + ":" + std::to_string(ep.port());
  SetNoDelay(transport_.socket());
  shared_->open_connections.fetch_add(1, std::memory_order_relaxed);
}

ServerConnection::~ServerConnection() {
  // Normally Close() ran; this covers a connection destroyed with its event loop.
  Close("destroyed");
}

void ServerConnection::Start() {
  {
    common::MutexLock lock(&outbox_->mu);
    outbox_->executor = transport_.get_executor();
    outbox_->conn = weak_from_this();
    outbox_->conn_raw = this;
  }
  last_read_ = last_write_ = accepted_at_ = Clock::now();
  tls_done_ = shared_->options.tls == nullptr;
  if (shared_->options.auth_secret.empty()) {
    authenticated_ = true;  // no secret: every connection has the cluster role
    role_ = auth::Role::kCluster;
  }
  asio::co_spawn(transport_.get_executor(), Run(shared_from_this()), asio::detached);
  asio::co_spawn(transport_.get_executor(), Watchdog(shared_from_this()), asio::detached);
}

void ServerConnection::BeginStop() {
  asio::post(transport_.get_executor(), [self = shared_from_this()] {
    if (self->closed_ || self->stop_requested_) return;
    self->stop_requested_ = true;
    if (self->draining_) return;
    // Wakes the pending read with EOF (or with bytes already received, which are discarded):
    // a cancel() would also abort a write in progress.
    std::error_code ignored;
    self->transport_.socket().shutdown(asio::ip::tcp::socket::shutdown_receive, ignored);
    self->resume_timer_.cancel();
  });
}

void ServerConnection::ForceClose() {
  asio::post(transport_.get_executor(),
             [self = shared_from_this()] { self->Close("server stop"); });
}

asio::awaitable<void> ServerConnection::Run(std::shared_ptr<ServerConnection> self) {
  try {
    co_await self->ReadLoop();
  } catch (const std::exception& e) {
    // Nothing in the loop is expected to throw; bad_alloc is the realistic case.
    spdlog::error("shardkv server: {}: {}; closing the connection", self->peer_, e.what());
    self->Close("internal error");
  }
}

asio::awaitable<void> ServerConnection::ReadLoop() {
  const ServerOptions& options = shared_->options;
  if (!tls_done_) {
    std::error_code ec = co_await transport_.StartTls(*options.tls, /*server=*/true, "");
    if (closed_) co_return;
    if (ec) {
      shared_->tls_failures.fetch_add(1, std::memory_order_relaxed);
      // One line per refused peer, as for the secret handshake; TLS has no channel left to
      // explain the refusal to the peer beyond OpenSSL's alert.
      spdlog::warn("shardkv server: {}: TLS handshake failed: {}; closing the connection", peer_,
                   TlsErrorText(transport_, ec, ""));
      Close("tls handshake failed");
      co_return;
    }
    tls_done_ = true;
  }
  if (!authenticated_ && !co_await Handshake()) co_return;
  while (!closed_ && !draining_) {
    // Backpressure: too many requests in flight or too many unwritten response bytes.
    for (;;) {
      bool pause;
      {
        common::MutexLock lock(&outbox_->mu);
        pause = OverLimits(options, outbox_->in_flight, outbox_->unflushed_bytes);
        outbox_->read_paused = pause;
      }
      if (!pause || closed_ || stop_requested_) break;
      resume_timer_.expires_at(Clock::time_point::max());
      co_await resume_timer_.async_wait(kUseTuple);
    }
    if (closed_) co_return;
    if (stop_requested_) break;

    std::span<char> space = decoder_.PrepareWrite(kReadChunkBytes);
    auto [ec, n] =
        co_await transport_.async_read_some(asio::buffer(space.data(), space.size()), kUseTuple);
    if (closed_) co_return;
    if (stop_requested_) break;
    if (ec) {
      if (!IsEndOfStream(ec)) {
        spdlog::debug("shardkv server: {}: read: {}", peer_, ErrorText(ec));
        Close("read error");
        co_return;
      }
      if (decoder_.MidFrame()) {
        shared_->bad_frames.fetch_add(1, std::memory_order_relaxed);
        Status st = Status::InvalidArgument("truncated frame: connection closed after " +
                                            std::to_string(decoder_.BufferedBytes()) +
                                            " bytes of an incomplete frame");
        spdlog::warn("shardkv server: {}: {}; closing the connection", peer_, st.message());
        EnqueueError(0, st);
        Drain(/*wait_in_flight=*/false);
      } else {
        Drain(/*wait_in_flight=*/true);  // a half-close: answer what is in flight, then close
      }
      co_return;
    }
    decoder_.CommitWrite(n);
    last_read_ = Clock::now();
    if (!DispatchFrames()) {
      Drain(/*wait_in_flight=*/false);
      co_return;
    }
  }
  if (!closed_) Drain(/*wait_in_flight=*/true);
}

bool ServerConnection::DispatchFrames() {
  bool ok = true;
  std::string_view payload;
  tls_dispatching = this;
  while (!closed_ && decoder_.Next(&payload)) {
    shared_->frames_in.fetch_add(1, std::memory_order_relaxed);
    uint64_t id = 0;
    StatusOr<Request> request = DecodeRequest(payload, shared_->options.codec, &id);
    if (!request.ok() && auth::LooksLikeHandshake(payload)) {
      // A client with a secret talking to a node without one (or a second handshake): say so
      // rather than "bad message", and close.
      shared_->auth_failures.fetch_add(1, std::memory_order_relaxed);
      Status st = Status::Unauthenticated(
          shared_->options.auth_secret.empty()
              ? "this node has no secret configured (no --auth-secret-file) but the client sent "
                "an authentication handshake: configure the same secret on both sides"
              : "unexpected authentication handshake on an authenticated connection");
      spdlog::warn("shardkv server: {}: {}; closing the connection", peer_, st.message());
      EnqueueError(0, st);
      ok = false;
      break;
    }
    if (!request.ok()) {
      EnqueueError(id, request.status());
      if (request.status().code() == Status::Code::kCorruption) {
        shared_->bad_frames.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("shardkv server: {}: {}; closing the connection", peer_,
                     request.status().message());
        ok = false;
        break;
      }
      continue;  // a well-formed request this build cannot serve: only it fails
    }
    if (role_ != auth::Role::kCluster && auth::NodeOnly(request->body)) {
      EnqueueError(id, Status::Unauthenticated(
                           std::string(OpName(request->body)) +
                           " needs the cluster secret: this connection authenticated with the "
                           "client secret, which allows data and admin operations only"));
      continue;
    }
    {
      common::MutexLock lock(&outbox_->mu);
      ++outbox_->in_flight;
    }
    shared_->in_flight.fetch_add(1, std::memory_order_acq_rel);
    auto completion = std::make_shared<Completion>(outbox_, id);
    try {
      shared_->handler->Handle(std::move(request).value(),
                               [c = std::move(completion)](Response r) { c->Done(std::move(r)); });
    } catch (const std::exception& e) {
      // The contract forbids throwing; if it happens anyway the Completion still answers.
      spdlog::error("shardkv server: request handler threw: {}", e.what());
    }
  }
  tls_dispatching = nullptr;
  if (ok && !decoder_.status().ok()) {
    shared_->bad_frames.fetch_add(1, std::memory_order_relaxed);
    spdlog::warn("shardkv server: {}: {}; closing the connection", peer_,
                 decoder_.status().message());
    EnqueueError(0, decoder_.status());
    ok = false;
  }
  // One write for every response the batch produced synchronously.
  bool start = false;
  {
    common::MutexLock lock(&outbox_->mu);
    if (!outbox_->write_scheduled && !outbox_->pending.empty()) {
      outbox_->write_scheduled = true;
      start = true;
    }
  }
  if (start) StartWrite();
  return ok;
}

void ServerConnection::EnqueueError(uint64_t request_id, const Status& status) {
  std::string encoded;
  if (!EncodeResponse(MakeErrorResponse(request_id, status), &encoded, shared_->options.codec)
           .ok()) {
    return;
  }
  common::MutexLock lock(&outbox_->mu);
  if (outbox_->closed) return;
  outbox_->pending.append(encoded);
  outbox_->unflushed_bytes += encoded.size();
  shared_->frames_out.fetch_add(1, std::memory_order_relaxed);
}

void ServerConnection::StartWrite() {
  if (closed_) return;
  if (write_in_progress_) return;  // OnWriteDone continues with whatever is pending
  {
    common::MutexLock lock(&outbox_->mu);
    if (outbox_->pending.empty()) {
      outbox_->write_scheduled = false;
    } else {
      outbox_->write_scheduled = true;
      writing_.swap(outbox_->pending);
    }
  }
  if (writing_.empty()) {
    MaybeFinishDrain();
    return;
  }
  write_in_progress_ = true;
  last_write_ = Clock::now();
  asio::async_write(
      transport_, asio::buffer(writing_),
      [self = shared_from_this()](const std::error_code& ec, size_t) { self->OnWriteDone(ec); });
}

void ServerConnection::OnWriteDone(const std::error_code& ec) {
  write_in_progress_ = false;
  if (closed_) return;
  if (ec) {
    spdlog::debug("shardkv server: {}: write: {}", peer_, ErrorText(ec));
    Close("write error");
    return;
  }
  last_write_ = Clock::now();
  const size_t written = writing_.size();
  writing_.clear();
  if (writing_.capacity() > kKeepWriteBufferBytes) std::string().swap(writing_);
  bool resume = false;
  {
    common::MutexLock lock(&outbox_->mu);
    outbox_->unflushed_bytes -= std::min(outbox_->unflushed_bytes, written);
    if (outbox_->read_paused &&
        !OverLimits(shared_->options, outbox_->in_flight, outbox_->unflushed_bytes)) {
      outbox_->read_paused = false;
      resume = true;
    }
  }
  if (resume) ResumeReading();
  StartWrite();
}

void ServerConnection::ResumeReading() { resume_timer_.cancel(); }

void ServerConnection::Drain(bool wait_in_flight) {
  if (closed_) return;
  draining_ = true;
  drain_waits_in_flight_ = wait_in_flight;
  bool start = false;
  {
    common::MutexLock lock(&outbox_->mu);
    if (!outbox_->write_scheduled && !outbox_->pending.empty()) {
      outbox_->write_scheduled = true;
      start = true;
    }
  }
  if (start) {
    StartWrite();
  } else {
    MaybeFinishDrain();
  }
}

void ServerConnection::MaybeFinishDrain() {
  if (!draining_ || closed_ || write_in_progress_) return;
  {
    common::MutexLock lock(&outbox_->mu);
    if (!outbox_->pending.empty()) return;
    if (drain_waits_in_flight_ && outbox_->in_flight > 0) return;
  }
  // Everything is written: send FIN after the data so the peer reads it all, then close.
  std::error_code ignored;
  transport_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  Close("drained");
}

void ServerConnection::Close(const char* why) {
  if (closed_) return;
  closed_ = true;
  {
    common::MutexLock lock(&outbox_->mu);
    outbox_->closed = true;
    outbox_->pending.clear();
    outbox_->unflushed_bytes = 0;
  }
  std::error_code ignored;
  transport_.socket().close(ignored);
  resume_timer_.cancel();
  watchdog_timer_.cancel();
  spdlog::debug("shardkv server: {}: connection closed ({})", peer_, why);
  {
    common::MutexLock lock(&shared_->mu);
    shared_->connections.erase(id_);
    shared_->open_connections.fetch_sub(1, std::memory_order_acq_rel);
    shared_->idle_cv.notify_all();
  }
}

asio::awaitable<void> ServerConnection::Watchdog(std::shared_ptr<ServerConnection> self) {
  while (!self->closed_) {
    bool expired = false;
    const Clock::time_point deadline = self->NextWatchdogDeadline(&expired);
    if (expired && !self->tls_done_ && !self->draining_) {
      spdlog::info("shardkv server: {}: no TLS handshake within {} ms; closing the connection",
                   self->peer_, self->shared_->options.handshake_timeout.count());
      self->shared_->tls_failures.fetch_add(1, std::memory_order_relaxed);
      self->Close("tls handshake timeout");
      co_return;
    }
    if (expired && !self->authenticated_ && !self->draining_) {
      self->Refuse(Status::Unauthenticated(
          "no authentication handshake within " +
          std::to_string(self->shared_->options.handshake_timeout.count()) + " ms"));
      continue;
    }
    if (expired) {
      spdlog::info("shardkv server: {}: timed out; closing the connection", self->peer_);
      self->Close("timeout");
      co_return;
    }
    self->watchdog_timer_.expires_at(deadline);
    co_await self->watchdog_timer_.async_wait(kUseTuple);
  }
}

Clock::time_point ServerConnection::NextWatchdogDeadline(bool* expired) {
  const ServerOptions& o = shared_->options;
  const Clock::time_point now = Clock::now();
  size_t in_flight;
  {
    common::MutexLock lock(&outbox_->mu);
    in_flight = outbox_->in_flight;
  }
  Clock::time_point deadline = Clock::time_point::max();
  if ((!authenticated_ || !tls_done_) && !draining_ && o.handshake_timeout.count() > 0) {
    deadline = std::min(deadline, accepted_at_ + o.handshake_timeout);
  }
  const bool mid_frame = !draining_ && decoder_.MidFrame();
  if (o.read_timeout.count() > 0 && write_in_progress_) {
    deadline = std::min(deadline, last_write_ + o.read_timeout);  // the peer stopped reading
  }
  if (o.read_timeout.count() > 0 && mid_frame) {
    deadline = std::min(deadline, last_read_ + o.read_timeout);  // the peer stalled mid-frame
  }
  if (o.idle_timeout.count() > 0 && in_flight == 0 && !write_in_progress_ && !mid_frame) {
    deadline = std::min(deadline, std::max(last_read_, last_write_) + o.idle_timeout);
  }
  *expired = deadline <= now;
  return std::min(deadline, now + kWatchdogRecheck);
}

}  // namespace shardkv::net
