#include "net/rpc_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <exception>
#include <future>
#include <queue>
#include <unordered_map>
#include <utility>

#include "common/mutex.h"
#include "net/frame_decoder.h"
#include "net/io_context_impl.h"

namespace shardkv::net {
namespace {

using Clock = RpcClient::Clock;

constexpr size_t kReadChunkBytes = 16 * 1024;
constexpr size_t kKeepWriteBufferBytes = size_t{1} << 20;

// User callbacks must not throw; if one does, it must not take the I/O thread down with it.
void Invoke(const RpcClient::Callback& done, StatusOr<Response> result) {
  try {
    done(std::move(result));
  } catch (const std::exception& e) {
    spdlog::error("shardkv rpc: a call's callback threw: {}", e.what());
  } catch (...) {
    spdlog::error("shardkv rpc: a call's callback threw");
  }
}

}  // namespace

Status ParseHostPort(const std::string& address, std::string* host, uint16_t* port) {
  auto bad = [&](const char* why) {
    return Status::InvalidArgument("bad address \"" + address + "\": " + why);
  };
  size_t colon;
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':') {
      return bad("expected [ipv6]:port");
    }
    *host = address.substr(1, close - 1);
    colon = close + 1;
  } else {
    colon = address.rfind(':');
    if (colon == std::string::npos) return bad("expected host:port");
    *host = address.substr(0, colon);
    if (host->find(':') != std::string::npos) return bad("an IPv6 address needs [brackets]");
  }
  if (host->empty()) return bad("empty host");
  const char* first = address.data() + colon + 1;
  const char* last = address.data() + address.size();
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last || first == last || value == 0 || value > 65535) {
    return bad("port must be 1-65535");
  }
  *port = static_cast<uint16_t>(value);
  return Status::OK();
}

struct RpcClient::Shared {
  std::string address;
  std::string host;
  uint16_t port = 0;
  Status address_status;  // why `address` is unusable, if it is
  RpcClientOptions options;
  IoContext::Impl* io = nullptr;

  std::atomic<uint64_t> next_id{1};
  std::atomic<uint64_t> next_channel{0};
  std::atomic<bool> closed{false};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> connect_failures{0};
  std::atomic<uint64_t> in_flight{0};
};

// One pooled connection. Any thread queues calls into it (under mu_); everything touching the
// socket runs on its event loop.
class RpcClient::Channel : public std::enable_shared_from_this<Channel> {
 public:
  Channel(std::shared_ptr<Shared> shared, asio::io_context& loop)
      : shared_(std::move(shared)),
        loop_(loop),
        socket_(loop),
        deadline_timer_(loop),
        connect_timer_(loop),
        decoder_(shared_->options.codec.max_frame_bytes) {}

  asio::io_context& loop() { return loop_; }

  // Any thread. `frame` is the encoded request carrying `id`.
  void Send(uint64_t id, const std::string& frame, Clock::time_point deadline, int64_t timeout_ms,
            Callback done);
  // Any thread. Fails pending calls with Aborted, on the calling thread.
  void Close();

 private:
  enum class State { kIdle, kConnecting, kConnected, kClosed };
  struct PendingCall {
    Callback done;
    Clock::time_point deadline;
    int64_t timeout_ms;
  };
  using DeadlineEntry = std::pair<Clock::time_point, uint64_t>;

  static asio::awaitable<void> Run(std::shared_ptr<Channel> self);
  asio::awaitable<Status> Connect();
  asio::awaitable<Status> ReadLoop();
  void Deliver(uint64_t id, StatusOr<Response> result);
  void FailAll(const Status& status);
  void StartWrite();
  void OnWriteDone(const std::error_code& ec, uint64_t generation);
  void ArmTimer();
  void Sweep();
  void CloseSocket();

  const std::shared_ptr<Shared> shared_;
  asio::io_context& loop_;

  // Event-loop state.
  asio::ip::tcp::socket socket_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer connect_timer_;
  FrameDecoder decoder_;
  std::string writing_;
  bool write_in_progress_ = false;
  bool connecting_ = false;
  bool connect_timed_out_ = false;
  uint64_t generation_ = 0;  // bumped per successful connect
  Status write_error_;

  Mutex mu_;
  State state_ GUARDED_BY(mu_) = State::kIdle;
  std::unordered_map<uint64_t, PendingCall> pending_ GUARDED_BY(mu_);
  // Min-heap of call deadlines. Entries of finished calls are skipped when they surface, and
  // the heap is rebuilt when they pile up.
  std::priority_queue<DeadlineEntry, std::vector<DeadlineEntry>, std::greater<>> deadlines_
      GUARDED_BY(mu_);
  std::string out_ GUARDED_BY(mu_);
  bool write_scheduled_ GUARDED_BY(mu_) = false;
  Clock::time_point armed_at_ GUARDED_BY(mu_) = Clock::time_point::max();
};

void RpcClient::Channel::Send(uint64_t id, const std::string& frame, Clock::time_point deadline,
                              int64_t timeout_ms, Callback done) {
  bool connect = false, write = false, arm = false;
  {
    MutexLock lock(&mu_);
    if (state_ == State::kClosed) {
      lock.Unlock();
      Invoke(done, Status::Aborted(shared_->address + ": client closed"));
      return;
    }
    pending_.emplace(id, PendingCall{std::move(done), deadline, timeout_ms});
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
    MutexLock lock(&mu_);
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
      self->FailAll(st);
      co_return;
    }
    self->shared_->connects.fetch_add(1, std::memory_order_relaxed);
    {
      MutexLock lock(&self->mu_);
      if (self->state_ == State::kClosed) {
        self->CloseSocket();
        co_return;
      }
      self->state_ = State::kConnected;
    }
    self->StartWrite();
    Status why = co_await self->ReadLoop();
    self->CloseSocket();
    self->FailAll(why);
  } catch (const std::exception& e) {
    self->CloseSocket();
    self->FailAll(Status::Internal(self->shared_->address + ": " + e.what()));
  }
}

asio::awaitable<Status> RpcClient::Channel::Connect() {
  const std::string& address = shared_->address;
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
  connect_timer_.async_wait([self = shared_from_this()](const std::error_code& tec) {
    if (tec || !self->connecting_) return;
    self->connect_timed_out_ = true;
    std::error_code ignored;
    self->socket_.close(ignored);
  });
  // The condition stops a multi-address connect from moving on to the next address after the
  // timeout closed the socket.
  auto [cec, endpoint] = co_await asio::async_connect(
      socket_, endpoints,
      [this](const std::error_code&, const asio::ip::tcp::endpoint&) {
        return !connect_timed_out_;
      },
      kUseTuple);
  connecting_ = false;
  connect_timer_.cancel();
  if (connect_timed_out_) {
    co_return Status::Unavailable(address + ": connect timed out after " +
                                  std::to_string(shared_->options.connect_timeout.count()) + " ms");
  }
  if (cec) co_return Status::Unavailable(address + ": " + ErrorText(cec));
  SetNoDelay(socket_);
  decoder_.Reset();
  write_error_ = Status::OK();
  ++generation_;
  co_return Status::OK();
}

asio::awaitable<Status> RpcClient::Channel::ReadLoop() {
  const std::string& address = shared_->address;
  for (;;) {
    std::span<char> space = decoder_.PrepareWrite(kReadChunkBytes);
    auto [ec, n] =
        co_await socket_.async_read_some(asio::buffer(space.data(), space.size()), kUseTuple);
    if (ec) {
      if (!write_error_.ok()) co_return write_error_;
      if (ec == asio::error::eof) {
        co_return Status::Unavailable(address + ": connection closed by the server");
      }
      if (ec == asio::error::operation_aborted) {
        co_return Status::Aborted(address + ": connection closed");
      }
      co_return Status::Unavailable(address + ": " + ErrorText(ec));
    }
    decoder_.CommitWrite(n);
    std::string_view payload;
    while (decoder_.Next(&payload)) {
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
    if (!decoder_.status().ok()) co_return decoder_.status().WithContext(address);
  }
}

void RpcClient::Channel::Deliver(uint64_t id, StatusOr<Response> result) {
  Callback done;
  {
    MutexLock lock(&mu_);
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
    MutexLock lock(&mu_);
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
    MutexLock lock(&mu_);
    if (state_ != State::kConnected || out_.empty()) {
      write_scheduled_ = false;
      return;
    }
    write_scheduled_ = true;
    writing_.swap(out_);
  }
  write_in_progress_ = true;
  asio::async_write(socket_, asio::buffer(writing_),
                    [self = shared_from_this(), generation = generation_](
                        const std::error_code& ec, size_t) { self->OnWriteDone(ec, generation); });
}

void RpcClient::Channel::OnWriteDone(const std::error_code& ec, uint64_t generation) {
  write_in_progress_ = false;
  writing_.clear();
  if (writing_.capacity() > kKeepWriteBufferBytes) std::string().swap(writing_);
  if (ec && generation == generation_) {
    // The read loop notices the closed socket and fails the pending calls with this cause.
    if (ec != asio::error::operation_aborted) {
      write_error_ = Status::Unavailable(shared_->address + ": " + ErrorText(ec));
    }
    CloseSocket();
    MutexLock lock(&mu_);
    write_scheduled_ = false;
    return;
  }
  StartWrite();
}

void RpcClient::Channel::ArmTimer() {
  Clock::time_point at;
  {
    MutexLock lock(&mu_);
    at = armed_at_;
  }
  if (at == Clock::time_point::max()) return;
  deadline_timer_.expires_at(at);  // cancels an earlier wait; its handler sees the abort
  deadline_timer_.async_wait([self = shared_from_this()](const std::error_code& ec) {
    if (ec != asio::error::operation_aborted) self->Sweep();
  });
}

void RpcClient::Channel::Sweep() {
  const Clock::time_point now = Clock::now();
  std::vector<PendingCall> expired;
  {
    MutexLock lock(&mu_);
    while (!deadlines_.empty() && deadlines_.top().first <= now) {
      const uint64_t id = deadlines_.top().second;
      deadlines_.pop();
      auto it = pending_.find(id);
      if (it == pending_.end()) continue;
      expired.push_back(std::move(it->second));
      pending_.erase(it);
    }
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
}

void RpcClient::Channel::CloseSocket() {
  std::error_code ignored;
  socket_.close(ignored);
}

RpcClient::RpcClient(std::string address, RpcClientOptions options, std::shared_ptr<IoContext> io)
    : io_(io ? std::move(io) : std::make_shared<IoContext>(options.io_threads, "shardkv-rpc")),
      shared_(std::make_shared<Shared>()) {
  shared_->address = std::move(address);
  shared_->address_status = ParseHostPort(shared_->address, &shared_->host, &shared_->port);
  shared_->options = std::move(options);
  shared_->io = &io_->impl();
  const int n = std::max(shared_->options.connections, 1);
  for (int i = 0; i < n; ++i) {
    channels_.push_back(std::make_shared<Channel>(shared_, io_->impl().Next()));
  }
}

RpcClient::~RpcClient() {
  Close();
  channels_.clear();
  if (io_.use_count() == 1 && io_->InIoThread()) {
    // Destroyed from one of its own callbacks: the pool cannot join itself here.
    spdlog::error("shardkv rpc: RpcClient destroyed on its own I/O thread; stopping it async");
    std::thread([io = std::move(io_)]() mutable { io.reset(); }).detach();
  }
}

void RpcClient::Call(Request request, Clock::time_point deadline, Callback done) {
  shared_->calls.fetch_add(1, std::memory_order_relaxed);
  // Rounded up, so that Call(r, 100ms, ...) reports "timed out after 100 ms".
  const auto timeout_ms =
      std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  Channel& channel =
      *channels_[shared_->next_channel.fetch_add(1, std::memory_order_relaxed) % channels_.size()];
  Status error;
  if (!shared_->address_status.ok()) {
    error = shared_->address_status;
  } else if (shared_->closed.load(std::memory_order_acquire) || shared_->io->stopped()) {
    error = Status::Aborted(shared_->address + ": client closed");
  } else {
    request.id = shared_->next_id.fetch_add(1, std::memory_order_relaxed);
    thread_local std::string frame;
    frame.clear();
    error = EncodeRequest(request, &frame, shared_->options.codec);
    if (error.ok()) {
      channel.Send(request.id, frame, deadline, std::max<int64_t>(timeout_ms, 0), std::move(done));
      return;
    }
    error = error.WithContext(shared_->address);
  }
  if (shared_->closed.load(std::memory_order_acquire) || shared_->io->stopped()) {
    Invoke(done, error);
    return;
  }
  asio::post(channel.loop(), [done = std::move(done), error] { Invoke(done, error); });
}

void RpcClient::Call(Request request, std::chrono::milliseconds timeout, Callback done) {
  Call(std::move(request), Clock::now() + timeout, std::move(done));
}

StatusOr<Response> RpcClient::CallSync(Request request, std::chrono::milliseconds timeout) {
  if (io_->InIoThread()) {
    return Status::FailedPrecondition(shared_->address +
                                      ": CallSync on an I/O thread would wait for itself");
  }
  auto promise = std::make_shared<std::promise<StatusOr<Response>>>();
  auto future = promise->get_future();
  Call(std::move(request), timeout,
       [promise](StatusOr<Response> result) { promise->set_value(std::move(result)); });
  try {
    return future.get();
  } catch (const std::future_error&) {
    // The callback was destroyed without running: its event loop was stopped.
    return Status::Aborted(shared_->address + ": I/O stopped before the call completed");
  }
}

void RpcClient::Close() {
  shared_->closed.store(true, std::memory_order_release);
  for (auto& c : channels_) c->Close();
}

const std::string& RpcClient::address() const { return shared_->address; }

RpcClient::Stats RpcClient::stats() const {
  Stats s;
  s.calls = shared_->calls.load(std::memory_order_relaxed);
  s.timeouts = shared_->timeouts.load(std::memory_order_relaxed);
  s.connects = shared_->connects.load(std::memory_order_relaxed);
  s.connect_failures = shared_->connect_failures.load(std::memory_order_relaxed);
  s.in_flight = shared_->in_flight.load(std::memory_order_relaxed);
  return s;
}

}  // namespace shardkv::net
