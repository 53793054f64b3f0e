#include "net/io_context.h"

#include <pthread.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "common/loop_turn.h"
#include "net/io_context_impl.h"

namespace shardkv::net {
namespace {

// The pool whose loop the current thread runs, for InIoThread().
thread_local const IoContext::Impl* tls_current_pool = nullptr;

}  // namespace

std::string ErrorText(const std::error_code& ec) {
  std::string text = ec.message();
  if (!text.empty() && std::isupper(static_cast<unsigned char>(text[0])) &&
      (text.size() < 2 || !std::isupper(static_cast<unsigned char>(text[1])))) {
    text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
  }
  return text;
}

IoContext::Impl::Impl(int threads, std::string name) {
  const int n = std::max(threads, 1);
  contexts_.reserve(n);
  guards_.reserve(n);
  for (int i = 0; i < n; ++i) {
    // Concurrency hint 1: each loop is run by exactly one thread, so Asio can skip locking.
    contexts_.push_back(std::make_unique<asio::io_context>(1));
    guards_.push_back(asio::make_work_guard(*contexts_.back()));
  }
  threads_.reserve(n);
  for (int i = 0; i < n; ++i) {
    std::string thread_name = name + "-" + std::to_string(i);
    threads_.emplace_back([this, i, thread_name = std::move(thread_name)] {
      pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());
      tls_current_pool = this;
      // asio::defer: behind the handlers this loop has ready, on this thread (no wakeup of
      // another thread, as post would cost).
      asio::io_context& ctx = *contexts_[i];
      common::LoopTurn::Install(
          [&ctx](std::function<void()> fn) { asio::defer(ctx, std::move(fn)); });
      ctx.run();
      common::LoopTurn::Install(nullptr);
      tls_current_pool = nullptr;
    });
  }
}

IoContext::Impl::~Impl() {
  Stop();
  // Loop 0 may hold sockets that belong to the other loops (a Server's acceptor lives on loop 0
  // and accepts onto the others), so it is destroyed first, while the others still exist.
  for (auto& ctx : contexts_) ctx.reset();
}

asio::io_context& IoContext::Impl::Next() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

bool IoContext::Impl::InIoThread() const { return tls_current_pool == this; }

void IoContext::Impl::Stop() {
  if (stopped_.exchange(true)) return;
  for (auto& g : guards_) g.reset();
  for (auto& ctx : contexts_) ctx->stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

IoContext::IoContext(int threads, std::string name)
    : impl_(std::make_unique<Impl>(threads, std::move(name))) {}

IoContext::~IoContext() = default;

int IoContext::threads() const { return static_cast<int>(impl_->size()); }

bool IoContext::InIoThread() const { return impl_->InIoThread(); }

void IoContext::Stop() { impl_->Stop(); }

}  // namespace shardkv::net
