#include "net/test_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "net/codec.h"

namespace shardkv::net::testing {
namespace {

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

int RemainingMs(std::chrono::steady_clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() < 0 ? 0 : static_cast<int>(left.count());
}

}  // namespace

RawSocket::RawSocket(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in addr = Loopback(port);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

RawSocket::~RawSocket() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawSocket::SendAll(std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

void RawSocket::ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }

long RawSocket::ReadSome(std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;  // timeout or error
    std::span<char> space = decoder_.PrepareWrite(4096);
    ssize_t n = ::recv(fd_, space.data(), space.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    decoder_.CommitWrite(static_cast<size_t>(n));
    return n;
  }
}

std::optional<std::string> RawSocket::ReadFrame(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string_view payload;
    if (decoder_.Next(&payload)) return std::string(payload);
    if (!decoder_.status().ok()) return std::nullopt;
    if (ReadSome(deadline) <= 0) return std::nullopt;
  }
}

std::optional<Response> RawSocket::ReadResponse(std::chrono::milliseconds timeout) {
  auto payload = ReadFrame(timeout);
  if (!payload) return std::nullopt;
  auto r = DecodeResponse(*payload);
  if (!r.ok()) return std::nullopt;
  return std::move(r).value();
}

std::optional<Request> RawSocket::ReadRequest(std::chrono::milliseconds timeout) {
  auto payload = ReadFrame(timeout);
  if (!payload) return std::nullopt;
  auto r = DecodeRequest(*payload);
  if (!r.ok()) return std::nullopt;
  return std::move(r).value();
}

bool RawSocket::WaitForClose(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;  // EOF or reset
  }
}

RawListener::RawListener(bool listen) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  sockaddr_in addr = Loopback(0);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
  socklen_t len = sizeof(addr);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  if (listen) ::listen(fd_, 16);
}

RawListener::~RawListener() {
  if (fd_ >= 0) ::close(fd_);
}

int RawListener::Accept(std::chrono::milliseconds timeout) {
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return -1;
  return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
}

std::string Frame(const Request& request) {
  std::string out;
  (void)EncodeRequest(request, &out);
  return out;
}

std::string Frame(const Response& response) {
  std::string out;
  (void)EncodeResponse(response, &out);
  return out;
}

}  // namespace shardkv::net::testing
