// RpcClient::Channel: one pooled connection of an RpcClient (connect, pipelined writes, the
// read loop matching responses to calls, deadlines). Split from rpc_client.cc, which keeps the
// public RpcClient calls; the class itself is declared in rpc_channel.h.
#include "net/rpc_channel.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "net/auth_handshake.h"

namespace shardkv::net {
namespace {

// Why the first bytes a server sent on a connection are no shardkv frame (FrameDecoder refused
// their length): names what answered. Any 4 printable bytes as a length exceed the frame limit,
// so a text protocol always lands here.
Status ForeignProtocol(const std::string& address, std::string_view first) {
  std::string shown;
  for (char c : first.substr(0, std::min<size_t>(first.size(), 60))) {
    if (c == '\r' || c == '\n') break;
    shown += (c >= 0x20 && c < 0x7f) ? c : '.';
  }
  std::string what = "a server of another protocol";
  if (first.starts_with("HTTP/")) {
    what = "an HTTP server (a node's metrics port?)";
  } else if (first[0] == '-' || first[0] == '+' || first[0] == '$' || first[0] == '*' ||
             first[0] == ':') {
    what = "a Redis server (a node's Redis port?)";
  }
  // No shardkv node read the request: nothing ran.
  return Status(Status::Code::kUnavailable, Status::Reason::kUnreachable,
                address + " is not a shardkv node: " + what + " answered \"" + shown +
                    "\"; give the node's own address (the ADDRESS column of 'shardkv cluster "
                    "status')");
}

// How long a large frame may go without new bytes and still count as arriving (Sweep).
constexpr std::chrono::milliseconds kArrivalGrace{250};

// A node's reply during the handshake is a handshake message or one error Response.
constexpr size_t kMaxHandshakeReplyBytes = 64 * 1024;

// A failed read or write: the connection is gone (Unavailable, retried elsewhere), unless the
// node refused this client's TLS certificate (transport.h, IsTlsRefusal).
Status ConnectionError(const std::string& address, const std::string& what,
                       const std::error_code& ec) {
  if (IsTlsRefusal(ec)) {
    return Status::Unauthenticated(address +
                                   ": TLS handshake failed: the node refused: " + ErrorText(ec));
  }
  return Status::Unavailable(address + what + ErrorText(ec));
}

}  // namespace

void Invoke(const RpcClient::Callback& done, StatusOr<Response> result) {
  try {
    done(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("shardkv rpc: a call's callback threw: {}", e.what());
  } catch (...) {
    spdlog::error("shardkv rpc: a call's callback threw");
  }
}

void RpcClient::Channel::Send(uint64_t id, const std::string& frame, Clock::time_point deadline,
                              Clock::time_point patient_until, int64_t timeout_ms, Callback done) {
  bool connect = false, write = false, arm = false;
  {
    common::MutexLock lock(&mu_);
    if (state_ == State::kClosed) {
      lock.Unlock();
      Invoke(done, Status::Aborted(shared_->address + ": client closed"));
      return;
    }
    pending_.emplace(
        id,
        PendingCall{std::move(done), deadline, timeout_ms, reads_.load(std::memory_order_relaxed),
                    deadline + std::chrono::milliseconds(timeout_ms), patient_until});
    deadlines_.emplace(deadline, id);
    out_.append(frame);
    shared_->in_flight.fetch_add(1, std::memory_order_relaxed);
    if (state_ == State::kIdle) {
      state_ = State::kConnecting;
      connect = true;
    } else if (state_ == State::kConnected && !write_scheduled_) {
      write_scheduled_ = true;
      write = true;
    }
    if (deadline < armed_at_) {
      armed_at_ = deadline;
      arm = true;
    }
  }
  if (connect || write || arm) {
    asio::post(loop_, [self = shared_from_this(), connect, write, arm] {
      if (arm) self->ArmTimer();
      if (connect) asio::co_spawn(self->loop_, Run(self), asio::detached);
      if (write) self->StartWrite();
    });
  }
}

void RpcClient::Channel::Close() {
  std::unordered_map<uint64_t, PendingCall> abandoned;
  {
    common::MutexLock lock(&mu_);
    if (state_ == State::kClosed) return;
    state_ = State::kClosed;
    abandoned.swap(pending_);
    deadlines_ = {};
    out_.clear();
  }
  asio::post(loop_, [self = shared_from_this()] {
    self->CloseSocket();
    self->deadline_timer_.cancel();
    self->connect_timer_.cancel();
  });
  shared_->in_flight.fetch_sub(abandoned.size(), std::memory_order_relaxed);
  for (auto& [id, call] : abandoned) {
    Invoke(call.done, Status::Aborted(shared_->address + ": client closed"));
  }
}

asio::awaitable<void> RpcClient::Channel::Run(std::shared_ptr<Channel> self) {
  try {
    Status st = co_await self->Connect();
    if (!st.ok()) {
      self->shared_->connect_failures.fetch_add(1, std::memory_order_relaxed);
      self->CloseSocket();
      // Nothing is written before the connection (and its handshakes) stands: nothing was sent.
      if (st.code() == Status::Code::kUnavailable && st.reason() == Status::Reason::kNone) {
        st = st.WithReason(Status::Reason::kUnreachable);
      }
      self->FailAll(st);
      co_return;
    }
    self->shared_->connects.fetch_add(1, std::memory_order_relaxed);
    {
      common::MutexLock lock(&self->mu_);
      if (self->state_ == State::kClosed) {
        self->CloseSocket();
        co_return;
      }
      self->state_ = State::kConnected;
    }
    self->StartWrite();
    Status why = co_await self->ReadLoop();
    self->CloseSocket();
    // The connection broke (closed by the node, reset, a failed write, a probe's reset) with
    // the pending calls written or about to be: each may or may not have run.
    if (why.code() == Status::Code::kUnavailable && why.reason() == Status::Reason::kNone) {
      why = why.WithReason(Status::Reason::kLostInFlight);
    }
    self->FailAll(why);
  } catch (const std::exception& e) {
    self->CloseSocket();
    self->FailAll(Status::Internal(self->shared_->address + ": " + e.what()));
  }
}

asio::awaitable<Status> RpcClient::Channel::Connect() {
  const std::string& address = shared_->address;
  transport_ = std::make_shared<Transport>(loop_);
  std::shared_ptr<Transport> t = transport_;
  std::vector<asio::ip::tcp::endpoint> endpoints;
  std::error_code ec;
  asio::ip::address ip = asio::ip::make_address(shared_->host, ec);
  if (!ec) {
    endpoints.emplace_back(ip, shared_->port);
  } else {
    asio::ip::tcp::resolver resolver(loop_);
    auto [rec, results] =
        co_await resolver.async_resolve(shared_->host, std::to_string(shared_->port), kUseTuple);
    if (rec) co_return Status::Unavailable(address + ": cannot resolve: " + ErrorText(rec));
    for (const auto& r : results) endpoints.push_back(r.endpoint());
  }
  // The connect timeout closes the socket, which aborts the connect.
  connecting_ = true;
  connect_timed_out_ = false;
  connect_timer_.expires_after(shared_->options.connect_timeout);
  connect_timer_.async_wait([self = shared_from_this(), t](const std::error_code& tec) {
    if (tec || !self->connecting_) return;
    self->connect_timed_out_ = true;
    t->Close();
  });
  // The condition stops a multi-address connect from moving on to the next address after the
  // timeout closed the socket.
  auto [cec, endpoint] = co_await asio::async_connect(
      t->socket(), endpoints,
      [this](const std::error_code&, const asio::ip::tcp::endpoint&) {
        return !connect_timed_out_;
      },
      kUseTuple);
  // The connect timer keeps running: it bounds the handshakes too, so a node that accepts and
  // never answers cannot hang the connection.
  if (!connect_timed_out_ && !cec && shared_->options.tls != nullptr) {
    Status st = co_await StartTls(*t);
    if (!st.ok() && !connect_timed_out_) {
      connecting_ = false;
      connect_timer_.cancel();
      co_return st;
    }
  }
  if (!connect_timed_out_ && !cec && !shared_->options.auth_secret.empty()) {
    Status st = co_await Authenticate();
    if (!st.ok() && !connect_timed_out_) {
      connecting_ = false;
      connect_timer_.cancel();
      co_return st;
    }
  }
  connecting_ = false;
  connect_timer_.cancel();
  if (connect_timed_out_) {
    co_return Status::Unavailable(
        address + ": connect" + (shared_->options.tls != nullptr ? ", TLS handshake" : "") +
        (shared_->options.auth_secret.empty() ? "" : " and authentication") + " timed out after " +
        std::to_string(shared_->options.connect_timeout.count()) + " ms");
  }
  if (cec) co_return Status::Unavailable(address + ": " + ErrorText(cec));
  SetNoDelay(t->socket());
  decoder_.Reset();
  frame_seen_ = false;
  write_error_ = Status::OK();
  ++generation_;
  co_return Status::OK();
}

asio::awaitable<StatusOr<std::string>> RpcClient::Channel::ReadFramePayload(size_t max_bytes) {
  const std::string& address = shared_->address;
  char header[kFrameHeaderBytes];
  auto [ec, n] = co_await asio::async_read(*transport_, asio::buffer(header), kUseTuple);
  if (ec) {
    co_return ConnectionError(address, ": connection closed during authentication: ", ec);
  }
  uint32_t length = 0;
  for (int i = 3; i >= 0; --i) length = (length << 8) | static_cast<uint8_t>(header[i]);
  if (length == 0 || length > max_bytes) {
    co_return Status::Corruption(address + ": a reply of " + std::to_string(length) +
                                 " bytes to the authentication handshake");
  }
  std::string payload(length, '\0');
  auto [pec, pn] = co_await asio::async_read(*transport_, asio::buffer(payload), kUseTuple);
  if (pec) {
    co_return ConnectionError(address, ": connection closed during authentication: ", pec);
  }
  co_return payload;
}

asio::awaitable<Status> RpcClient::Channel::Authenticate() {
  const std::string& address = shared_->address;
  const std::string& key = shared_->options.auth_secret;
  // A handshake message, or the node's error Response (a refusal), as a Status.
  auto expect = [&](StatusOr<std::string> payload, auth::Kind kind) -> StatusOr<auth::Message> {
    if (!payload.ok()) return payload.status();
    if (!auth::LooksLikeHandshake(*payload)) {
      StatusOr<Response> r = DecodeResponse(*payload, shared_->options.codec);
      if (r.ok() && !r->ok()) return r->status().WithContext(address);
      return Status::Corruption(address + ": unexpected reply to the authentication handshake");
    }
    StatusOr<auth::Message> m = auth::Parse(*payload, kind);
    if (!m.ok()) return m.status().WithContext(address);
    return m;
  };
  StatusOr<std::string> cn = auth::NewNonce();
  if (!cn.ok()) co_return cn.status().WithContext(address);
  std::string hello = auth::EncodeFrame(auth::Kind::kHello, *cn);
  auto [wec, wn] = co_await asio::async_write(*transport_, asio::buffer(hello), kUseTuple);
  if (wec) co_return ConnectionError(address, ": ", wec);
  StatusOr<auth::Message> challenge =
      expect(co_await ReadFramePayload(kMaxHandshakeReplyBytes), auth::Kind::kChallenge);
  if (!challenge.ok()) co_return challenge.status();
  const std::string& sn = challenge->body;
  std::string proof = auth::EncodeFrame(auth::Kind::kProof, auth::ClientProof(key, *cn, sn));
  auto [pec, pn] = co_await asio::async_write(*transport_, asio::buffer(proof), kUseTuple);
  if (pec) co_return ConnectionError(address, ": ", pec);
  StatusOr<auth::Message> welcome =
      expect(co_await ReadFramePayload(kMaxHandshakeReplyBytes), auth::Kind::kWelcome);
  if (!welcome.ok()) co_return welcome.status();
  if (!auth::SameMac(welcome->body, auth::ServerProof(key, *cn, sn, welcome->role))) {
    co_return Status::Unauthenticated(
        address +
        ": the node did not prove it knows this client's secret (it accepted the "
        "connection with another secret, or it is not the node it claims to be)");
  }
  co_return Status::OK();
}

asio::awaitable<Status> RpcClient::Channel::ReadLoop() {
  const std::string& address = shared_->address;
  std::shared_ptr<Transport> t = transport_;
  for (;;) {
    std::span<char> space = decoder_.PrepareWrite(kReadChunkBytes);
    auto [ec, n] = co_await t->async_read_some(asio::buffer(space.data(), space.size()), kUseTuple);
    if (ec) {
      if (!write_error_.ok()) co_return write_error_;
      if (IsEndOfStream(ec)) {
        co_return Status::Unavailable(address + ": connection closed by the server");
      }
      if (ec == asio::error::operation_aborted) {
        co_return Status::Aborted(address + ": connection closed");
      }
      co_return ConnectionError(address, ": ", ec);
    }
    reads_.fetch_add(1, std::memory_order_relaxed);
    last_read_at_ = Clock::now();
    decoder_.CommitWrite(n);
    std::string_view payload;
    while (decoder_.Next(&payload)) {
      frame_seen_ = true;
      StatusOr<Response> response = DecodeResponse(payload, shared_->options.codec);
      if (!response.ok()) co_return response.status().WithContext(address);
      if (response->id == 0) {
        // The server could not parse a request or refused the connection; it is closing.
        Status st = response->status();
        if (st.ok()) st = Status::Corruption("response without a request id");
        co_return st.WithContext(address);
      }
      const uint64_t id = response->id;
      Deliver(id, std::move(response));
    }
    if (!decoder_.status().ok()) {
      // A bad length before any frame: a Redis or HTTP server, not a broken node.
      if (!frame_seen_) co_return ForeignProtocol(address, decoder_.Buffered());
      co_return decoder_.status().WithContext(address);
    }
  }
}

void RpcClient::Channel::Deliver(uint64_t id, StatusOr<Response> result) {
  Callback done;
  {
    common::MutexLock lock(&mu_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return;  // timed out earlier: the late answer is dropped
    done = std::move(it->second.done);
    pending_.erase(it);
  }
  shared_->in_flight.fetch_sub(1, std::memory_order_relaxed);
  Invoke(done, std::move(result));
}

void RpcClient::Channel::FailAll(const Status& status) {
  std::unordered_map<uint64_t, PendingCall> failed;
  {
    common::MutexLock lock(&mu_);
    failed.swap(pending_);
    deadlines_ = {};
    out_.clear();
    write_scheduled_ = false;
    armed_at_ = Clock::time_point::max();
    if (state_ != State::kClosed) state_ = State::kIdle;  // the next call reconnects
  }
  shared_->in_flight.fetch_sub(failed.size(), std::memory_order_relaxed);
  for (auto& [id, call] : failed) Invoke(call.done, status);
}

void RpcClient::Channel::StartWrite() {
  if (write_in_progress_) return;  // OnWriteDone continues
  {
    common::MutexLock lock(&mu_);
    if (state_ != State::kConnected || out_.empty()) {
      write_scheduled_ = false;
      return;
    }
    write_scheduled_ = true;
    writing_.swap(out_);
  }
  write_in_progress_ = true;
  std::shared_ptr<Transport> t = transport_;
  asio::async_write(*t, asio::buffer(writing_),
                    [self = shared_from_this(), t, generation = generation_](
                        const std::error_code& ec, size_t) { self->OnWriteDone(ec, generation); });
}

void RpcClient::Channel::OnWriteDone(const std::error_code& ec, uint64_t generation) {
  write_in_progress_ = false;
  writing_.clear();
  if (writing_.capacity() > kKeepWriteBufferBytes) std::string().swap(writing_);
  if (ec && generation == generation_) {
    // The read loop notices the closed socket and fails the pending calls with this cause.
    if (ec != asio::error::operation_aborted) {
      write_error_ = ConnectionError(shared_->address, ": ", ec);
    }
    CloseSocket();
    common::MutexLock lock(&mu_);
    write_scheduled_ = false;
    return;
  }
  StartWrite();
}

void RpcClient::Channel::ArmTimer() {
  Clock::time_point at;
  {
    common::MutexLock lock(&mu_);
    at = armed_at_;
  }
  if (at == Clock::time_point::max()) return;
  deadline_timer_.expires_at(at);  // cancels an earlier wait; its handler sees the abort
  deadline_timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec != asio::error::operation_aborted) self->Sweep();
  });
}

bool RpcClient::Channel::LargeFrameArriving(Clock::time_point now) const {
  return decoder_.MidFrame() && decoder_.BufferedBytes() >= kKeepBufferBytes &&
         now - last_read_at_ < kArrivalGrace;
}

void RpcClient::Channel::Sweep() {
  const Clock::time_point now = Clock::now();
  std::vector<PendingCall> expired;
  bool silent = false;
  // A 16 or 32 MiB reply takes its time on a loaded machine; while its bytes keep arriving the
  // node is no paused one, and failing the call would only have it sent and read again.
  const bool arriving = LargeFrameArriving(now);
  bool probe = false;
  {
    common::MutexLock lock(&mu_);
    while (!deadlines_.empty() && deadlines_.top().first <= now) {
      const uint64_t id = deadlines_.top().second;
      deadlines_.pop();
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      PendingCall& call = it->second;
      if (call.patient_until > now && shared_->options.probe_timeout.count() > 0) {
        // Patience (RpcClient::Call): the ping below tells a slow node from a stopped one; the
        // call waits on while the connection lives.
        call.timeout_ms +=
            std::chrono::ceil<std::chrono::milliseconds>(call.patient_until - call.deadline)
                .count();
        call.deadline = call.patient_until;
        call.patient_until = call.deadline;
        deadlines_.emplace(call.deadline, id);
        probe = true;
        continue;
      }
      if (arriving && call.hard_deadline > now) {
        // The reply may be the large frame now arriving: not cut off while it moves.
        call.deadline = std::min(now + kArrivalGrace, call.hard_deadline);
        deadlines_.emplace(call.deadline, id);
        continue;
      }
      if (call.reads_at_send == reads_.load(std::memory_order_relaxed)) silent = true;
      expired.push_back(std::move(call));
      pending_.erase(it);
    }
    silent = (silent || probe) && state_ == State::kConnected;
    if (deadlines_.size() > 2 * pending_.size() + 1024) {
      decltype(deadlines_) live;
      for (const auto& [id, call] : pending_) live.emplace(call.deadline, id);
      deadlines_.swap(live);
    }
    armed_at_ = deadlines_.empty() ? Clock::time_point::max() : deadlines_.top().first;
  }
  ArmTimer();
  shared_->in_flight.fetch_sub(expired.size(), std::memory_order_relaxed);
  shared_->timeouts.fetch_add(expired.size(), std::memory_order_relaxed);
  for (auto& call : expired) {
    Invoke(call.done, Status::Timeout(shared_->address + ": timed out after " +
                                      std::to_string(call.timeout_ms) + " ms"));
  }
  if (silent) Probe();
}

void RpcClient::Channel::Probe() {
  const auto timeout = shared_->options.probe_timeout;
  if (probing_ || timeout.count() <= 0) return;
  Request ping;
  ping.id = shared_->next_id.fetch_add(1, std::memory_order_relaxed);
  ping.body = PingRequest{};
  std::string frame;
  if (!EncodeRequest(ping, &frame, shared_->options.codec).ok()) return;
  probing_ = true;
  shared_->probes.fetch_add(1, std::memory_order_relaxed);
  // The callback may run on a thread closing the client (Aborted): the decision is made on the
  // event loop, and only for the connection the probe was sent on.
  Send(ping.id, frame, Clock::now() + timeout, Clock::now() + timeout, timeout.count(),
       [self = shared_from_this(), generation = generation_](StatusOr<Response> r) {
         const bool unanswered = r.status().code() == Status::Code::kTimeout;
         asio::post(self->loop_, [self, generation, unanswered] {
           self->probing_ = false;
           if (!unanswered || generation != self->generation_) return;
           const std::string why = self->shared_->address + ": connection reset: no reply for " +
                                   std::to_string(self->shared_->options.probe_timeout.count()) +
                                   " ms after a call timed out, not even to a ping";
           spdlog::debug("shardkv rpc: {}", why);  // counted in stats().resets
           self->shared_->resets.fetch_add(1, std::memory_order_relaxed);
           if (self->write_error_.ok()) self->write_error_ = Status::Unavailable(why);
           self->CloseSocket();
         });
       });
}

void RpcClient::Channel::CloseSocket() { transport_->Close(); }

asio::awaitable<Status> RpcClient::Channel::StartTls(Transport& t) {
  const std::string& address = shared_->address;
  std::error_code ec = co_await t.StartTls(*shared_->options.tls, /*server=*/false, shared_->host);
  if (!ec) co_return Status::OK();
  if (ec.category() != asio::error::get_ssl_category()) {
    co_return Status::Unavailable(address +
                                  ": connection lost during the TLS handshake: " + ErrorText(ec));
  }
  // A certificate this side refused, or the node's alert refusing ours: retrying with the same
  // certificates cannot help.
  co_return Status::Unauthenticated(
      address + ": TLS handshake failed: " + TlsErrorText(t, ec, shared_->host));
}

}  // namespace shardkv::net
