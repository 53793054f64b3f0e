// Test helpers for net_tests: a blocking raw TCP client (POSIX sockets, every wait bounded by
// a deadline) for feeding a Server bytes no well-behaved client would send, a raw TCP listener
// for feeding an RpcClient bad responses, and a deadline poller.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "net/frame_decoder.h"
#include "net/messages.h"

namespace shardkv::net::testing {

inline constexpr auto kWait = std::chrono::seconds(10);  // upper bound for any test wait

// Polls `pred` every millisecond until it holds or `timeout` passes. Returns its last value.
inline bool PollUntil(const std::function<bool()>& pred,
                      std::chrono::milliseconds timeout = kWait) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

class RawSocket {
 public:
  // Connects to 127.0.0.1:port; check ok().
  explicit RawSocket(uint16_t port);
  explicit RawSocket(int fd) : fd_(fd) {}  // adopts an accepted socket
  ~RawSocket();
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool ok() const { return fd_ >= 0; }
  bool SendAll(std::string_view bytes);
  void ShutdownWrite();

  // Reads the next frame payload; nullopt on EOF, error or timeout.
  std::optional<std::string> ReadFrame(std::chrono::milliseconds timeout = kWait);
  // ReadFrame + DecodeResponse.
  std::optional<Response> ReadResponse(std::chrono::milliseconds timeout = kWait);
  // Reads the next frame payload and decodes it as a Request (for fake servers).
  std::optional<Request> ReadRequest(std::chrono::milliseconds timeout = kWait);
  // True once the peer closed the connection (EOF or reset); discards any data before it.
  bool WaitForClose(std::chrono::milliseconds timeout = kWait);

 private:
  // Reads once (waiting up to the deadline). Returns bytes read, 0 on EOF, -1 on error/timeout.
  long ReadSome(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  FrameDecoder decoder_;
};

// A listening socket on 127.0.0.1, port 0. With listen=false it is bound but not listening,
// so connecting to it is refused: a deterministic "nothing listens here" port.
class RawListener {
 public:
  explicit RawListener(bool listen = true);
  ~RawListener();
  RawListener(const RawListener&) = delete;
  RawListener& operator=(const RawListener&) = delete;

  uint16_t port() const { return port_; }
  // Accepts one connection (bounded wait); returns an adopted socket or -1.
  int Accept(std::chrono::milliseconds timeout = kWait);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// Encodes a request into one frame.
std::string Frame(const Request& request);
std::string Frame(const Response& response);

}  // namespace shardkv::net::testing
