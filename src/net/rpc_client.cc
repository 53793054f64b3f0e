// RpcClient's public calls and ParseHostPort. The pooled connections (RpcClient::Channel) are in
// rpc_channel.cc.
#include "net/rpc_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <future>
#include <thread>
#include <utility>

#include "net/rpc_channel.h"

namespace shardkv::net {
namespace {

using Clock = RpcClient::Clock;

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
  Call(std::move(request), deadline, deadline, std::move(done));
}

void RpcClient::Call(Request request, Clock::time_point deadline, Clock::time_point patient_until,
                     Callback done) {
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
      channel.Send(request.id, frame, deadline, std::max(patient_until, deadline),
                   std::max<int64_t>(timeout_ms, 0), std::move(done));
      ClearKeepingSmall(&frame);
      return;
    }
    ClearKeepingSmall(&frame);
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
  s.probes = shared_->probes.load(std::memory_order_relaxed);
  s.resets = shared_->resets.load(std::memory_order_relaxed);
  return s;
}

}  // namespace shardkv::net
