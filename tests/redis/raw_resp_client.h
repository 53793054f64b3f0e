// A blocking RESP client over a plain socket, for the tests of the Redis listener: sends bytes
// as given (well-formed or not) and reads what comes back, each read bounded by 5 s.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace shardkv::redis::testing {

// `args` as one RESP multibulk command.
inline std::string Resp(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const std::string& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

class RawClient {
 public:
  explicit RawClient(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  }
  ~RawClient() { ::close(fd_); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void Send(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // Reads until `want` bytes arrived, EOF, or 5 s passed.
  std::string Read(size_t want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (buffer_.size() < want && std::chrono::steady_clock::now() < deadline) {
      if (!Fill()) break;
    }
    const std::string out = buffer_.substr(0, want);
    buffer_.erase(0, out.size());
    return out;
  }
  // One reply that is not an array (a status, error, integer or bulk), with its CRLFs; "" if
  // none arrived within 5 s.
  std::string ReadReply() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    size_t eol = std::string::npos;
    while ((eol = buffer_.find("\r\n")) == std::string::npos &&
           std::chrono::steady_clock::now() < deadline) {
      if (!Fill()) break;
    }
    if (eol == std::string::npos) return "";
    size_t size = eol + 2;
    if (buffer_[0] == '$' && buffer_.compare(0, 3, "$-1") != 0) {
      size += std::stoul(buffer_.substr(1, eol - 1)) + 2;
    }
    return Read(size);
  }
  // Sends `args` and returns its reply (ReadReply).
  std::string Call(const std::vector<std::string>& args) {
    Send(Resp(args));
    return ReadReply();
  }
  // True once the server closed the connection (within 5 s).
  bool Closed() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!eof_ && std::chrono::steady_clock::now() < deadline) Fill();
    return eof_;
  }

 private:
  // Appends what arrives within 100 ms (perhaps nothing); false once the server closed.
  bool Fill() {
    if (eof_) return false;
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) return true;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      eof_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool eof_ = false;
  std::string buffer_;
};

}  // namespace shardkv::redis::testing
