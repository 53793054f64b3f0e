// Internal to src/net: the two halves of RpcClient's implementation that rpc_client.cc (the
// public RpcClient calls) and rpc_channel.cc (one pooled connection) share: the state common to
// a client's channels (RpcClient::Shared) and RpcClient::Channel. They live apart from
// rpc_client.cc so that each file holds one main class (and stays under ~500 lines). Include
// only from those two files: it pulls in Asio (net/io_context_impl.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "net/frame_decoder.h"
#include "net/io_context_impl.h"
#include "net/rpc_client.h"
#include "net/transport.h"

namespace shardkv::net {

// Runs a call's callback. User callbacks must not throw; if one does, it must not take the I/O
// thread down with it.
void Invoke(const RpcClient::Callback& done, StatusOr<Response> result);

struct RpcClient::Shared {
  std::string address;
  std::string host;
  uint16_t port = 0;
  Status address_status;  // why `address` is unusable, if it is
  RpcClientOptions options;
  IoContext::Impl* io = nullptr;

  // Request ids start at kFirstRequestId: its top bytes are "\r\n" on the wire (ids are
  // little-endian, early in every frame), so a Redis or HTTP server that a client was pointed at
  // by mistake sees a complete line in the first request and answers at once ("-ERR ...",
  // "400 Bad Request"), and ReadLoop names it instead of waiting out the timeout.
  static constexpr uint64_t kFirstRequestId = 0x0A0D000000000001ULL;
  std::atomic<uint64_t> next_id{kFirstRequestId};
  std::atomic<uint64_t> next_channel{0};
  std::atomic<bool> closed{false};
  std::atomic<uint64_t> calls{0};
  std::atomic<uint64_t> timeouts{0};
  std::atomic<uint64_t> connects{0};
  std::atomic<uint64_t> connect_failures{0};
  std::atomic<uint64_t> in_flight{0};
  std::atomic<uint64_t> probes{0};
  std::atomic<uint64_t> resets{0};
};

// One pooled connection. Any thread queues calls into it (under mu_); everything touching the
// socket runs on its event loop.
class RpcClient::Channel : public std::enable_shared_from_this<Channel> {
 public:
  Channel(std::shared_ptr<Shared> shared, asio::io_context& loop)
      : shared_(std::move(shared)),
        loop_(loop),
        transport_(std::make_shared<Transport>(loop)),
        deadline_timer_(loop),
        connect_timer_(loop),
        decoder_(shared_->options.codec.max_frame_bytes) {}

  asio::io_context& loop() { return loop_; }

  // Any thread. `frame` is the encoded request carrying `id`.
  // `patient_until` >= `deadline`: see RpcClient::Call.
  void Send(uint64_t id, const std::string& frame, Clock::time_point deadline,
            Clock::time_point patient_until, int64_t timeout_ms, Callback done);
  // Any thread. Fails pending calls with Aborted, on the calling thread.
  void Close();

 private:
  enum class State { kIdle, kConnecting, kConnected, kClosed };
  struct PendingCall {
    Callback done;
    Clock::time_point deadline;
    int64_t timeout_ms;
    uint64_t reads_at_send;  // reads_ when the call was queued: equal at timeout = silence
    // A call is not failed while a large frame is arriving (Sweep), up to this: twice its timeout.
    Clock::time_point hard_deadline;
    // RpcClient::Call's patient_until; cleared (= deadline) once the patience was granted.
    Clock::time_point patient_until;
  };
  using DeadlineEntry = std::pair<Clock::time_point, uint64_t>;

  static asio::awaitable<void> Run(std::shared_ptr<Channel> self);
  asio::awaitable<Status> Connect();
  // TLS (when configured), on a connected socket.
  asio::awaitable<Status> StartTls(Transport& t);
  // The client side of the handshake (auth_handshake.h), on a connected socket.
  asio::awaitable<Status> Authenticate();
  // Reads one frame's payload with exact reads (at most max_bytes).
  asio::awaitable<StatusOr<std::string>> ReadFramePayload(size_t max_bytes);
  asio::awaitable<Status> ReadLoop();
  void Deliver(uint64_t id, StatusOr<Response> result);
  void FailAll(const Status& status);
  void StartWrite();
  void OnWriteDone(const std::error_code& ec, uint64_t generation);
  void ArmTimer();
  void Sweep();
  // True while a large frame is arriving and its bytes keep coming (loop thread).
  bool LargeFrameArriving(Clock::time_point now) const;
  // After a call timed out on a silent connection: pings it, and resets it if the ping times
  // out too (RpcClientOptions::probe_timeout says why).
  void Probe();
  void CloseSocket();

  const std::shared_ptr<Shared> shared_;
  asio::io_context& loop_;

  // Event-loop state. A new Transport per connection (transport.h says why); handlers of a
  // connection hold their own reference to it.
  std::shared_ptr<Transport> transport_;
  asio::steady_timer deadline_timer_;
  asio::steady_timer connect_timer_;
  FrameDecoder decoder_;
  std::string writing_;
  bool write_in_progress_ = false;
  bool connecting_ = false;
  bool connect_timed_out_ = false;
  uint64_t generation_ = 0;  // bumped per successful connect
  bool probing_ = false;     // a probe ping is in flight on this connection
  Status write_error_;       // why the connection was closed from this side, if it was
  // Successful reads on this channel's connections (any bytes count as a sign of life). Written
  // on the event loop, read by Send on any thread.
  std::atomic<uint64_t> reads_{0};
  // Whether a whole frame arrived on this connection yet (ReadLoop; loop thread only).
  bool frame_seen_ = false;
  // When the last bytes arrived (ReadLoop; loop thread only).
  Clock::time_point last_read_at_{};

  common::Mutex mu_;
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

}  // namespace shardkv::net
