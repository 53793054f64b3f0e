// A blocking HTTP/1.1 exchange over a plain socket, for the metrics listener's tests: sends the
// bytes given (a well-formed request or not) and reads the whole answer until the server closes
// (every request here sends "Connection: close"), within a deadline.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <string>

namespace shardkv::testing {

struct HttpReply {
  int status = 0;  // 0: no answer (connection refused, closed before a status line, timed out)
  std::string headers;
  std::string body;
};

inline HttpReply HttpExchange(uint16_t port, const std::string& raw, int timeout_ms = 5000) {
  HttpReply reply;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return reply;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return reply;
  }
  size_t sent = 0;
  while (sent < raw.size()) {
    const ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may answer and close before reading everything
    sent += static_cast<size_t>(n);
  }
  std::string in;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left))) <= 0) break;
    char buf[8192];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  const size_t end = in.find("\r\n\r\n");
  if (in.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return reply;
  reply.status = std::atoi(in.c_str() + 9);
  reply.headers = in.substr(0, end);
  reply.body = in.substr(end + 4);
  return reply;
}

inline HttpReply HttpGet(uint16_t port, const std::string& path) {
  return HttpExchange(port,
                      "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
}

// The value of the sample `series` (name and labels exactly as written, e.g.
// `shardkv_requests_total{op="get",result="ok"}`) in a scrape, or -1 if absent.
inline double SampleValue(const std::string& text, const std::string& series) {
  const std::string needle = "\n" + series + " ";
  size_t at = text.find(needle);
  if (at == std::string::npos) {
    if (text.rfind(series + " ", 0) != 0) return -1;
    at = 0;
  } else {
    at += 1;
  }
  return std::stod(text.substr(at + series.size() + 1));
}

}  // namespace shardkv::testing
