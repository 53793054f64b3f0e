// Internal to src/net: the Asio side of IoContext, plus the Asio aliases the network .cc files
// share. Include only from .cc files in src/net (it pulls in Asio, which is slow to compile).
#pragma once

#ifndef ASIO_STANDALONE
#define ASIO_STANDALONE
#endif
// Under clang, Asio 1.22 enables co_await only with libc++'s <experimental/coroutine>; clang 14
// with libstdc++ has C++20 coroutines in <coroutine>, which Asio's GCC path already uses.
#if defined(__clang__) && !defined(ASIO_HAS_CO_AWAIT) && defined(__cpp_impl_coroutine)
#if __has_include(<coroutine>)
#define ASIO_HAS_CO_AWAIT 1
#endif
#endif

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <atomic>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "net/io_context.h"

namespace shardkv::net {

// co_await op(..., kUseTuple) yields (error_code, result...) instead of throwing.
inline constexpr auto kUseTuple = asio::experimental::as_tuple(asio::use_awaitable);

class IoContext::Impl {
 public:
  Impl(int threads, std::string name);
  ~Impl();

  // The next loop, round-robin. Thread-safe.
  asio::io_context& Next();
  asio::io_context& At(size_t i) { return *contexts_[i % contexts_.size()]; }
  size_t size() const { return contexts_.size(); }

  bool InIoThread() const;
  void Stop();
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

 private:
  using Guard = asio::executor_work_guard<asio::io_context::executor_type>;

  std::vector<std::unique_ptr<asio::io_context>> contexts_;
  std::vector<Guard> guards_;
  std::vector<std::thread> threads_;
  std::atomic<size_t> next_{0};
  std::atomic<bool> stopped_{false};
};

// "connection refused" rather than "Connection refused": Status messages are lower case.
std::string ErrorText(const std::error_code& ec);

// Sets TCP_NODELAY; requests and responses are small and latency-bound.
template <typename Socket>
void SetNoDelay(Socket& socket) {
  std::error_code ignored;
  socket.set_option(asio::ip::tcp::no_delay(true), ignored);
}

}  // namespace shardkv::net
